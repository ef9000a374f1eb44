/** The metrics listener: GET /metrics in the Prometheus text format, on its own port. */
import http from "node:http";
import type { Logger } from "pino";
import type { ListenAddress } from "../../config.js";
import type { BerthMetrics } from "./metrics.js";

export interface MetricsServer {
  readonly port: number;
  /** http://host:port/metrics */
  readonly url: string;
  close(): Promise<void>;
}

export async function startMetricsServer(metrics: BerthMetrics, addr: ListenAddress, logger: Logger): Promise<MetricsServer> {
  const server = http.createServer((req, res) => {
    const path = (req.url ?? "/").split("?")[0];
    if (req.method !== "GET" && req.method !== "HEAD") {
      res.writeHead(405, { allow: "GET, HEAD" }).end();
      return;
    }
    if (path !== "/metrics") {
      res.writeHead(404, { "content-type": "text/plain" }).end("not found: try /metrics\n");
      return;
    }
    metrics.text().then(
      (body) => {
        res.writeHead(200, { "content-type": metrics.registry.contentType });
        res.end(req.method === "HEAD" ? undefined : body);
      },
      (err: unknown) => {
        logger.error({ err }, "metrics: collecting failed");
        res.writeHead(500, { "content-type": "text/plain" }).end("collecting metrics failed\n");
      },
    );
  });
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((resolve, reject) => {
    server.once("error", (err) => reject(Object.assign(err, { message: `BERTH_METRICS_ADDR: ${err.message}` })));
    server.listen(addr.port, addr.host, () => resolve());
  });
  const a = server.address();
  const port = typeof a === "object" && a !== null ? a.port : addr.port;
  const host = addr.host.includes(":") ? `[${addr.host}]` : addr.host;
  const url = `http://${host}:${port}/metrics`;
  logger.info({ metrics: url }, "metrics listening");
  return {
    port,
    url,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
