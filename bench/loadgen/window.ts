/**
 * The subscriber workers' answer to a collect (bench/lib/events.ts Watchers.collect): the latency
 * histogram of the deliveries of events sent within [fromUs, toUs], from the parallel arrays of
 * send and receipt times each worker keeps.
 */
import hdr from "hdr-histogram-js";

export function windowHistogram(sent: Float64Array, recv: Float64Array, n: number, fromUs: number, toUs: number): { inWindow: number; histogram: string } {
  const h = hdr.build({ lowestDiscernibleValue: 1, highestTrackableValue: 120_000_000, numberOfSignificantValueDigits: 3 });
  let inWindow = 0;
  for (let i = 0; i < n; i++) {
    if (sent[i]! < fromUs || sent[i]! > toUs) continue;
    inWindow++;
    h.recordValue(Math.max(1, Math.round(recv[i]! - sent[i]!)));
  }
  return { inWindow, histogram: hdr.encodeIntoCompressedBase64(h) };
}
