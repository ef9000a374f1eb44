/** pino JSON logs by default; pretty when stdout is a terminal. */
import pino, { type Logger } from "pino";

export function createLogger(level: string): Logger {
  if (process.stdout.isTTY && process.env.BERTH_LOG_FORMAT !== "json") {
    return pino({ level, transport: { target: "pino-pretty", options: { colorize: true, translateTime: "SYS:HH:MM:ss.l" } } });
  }
  return pino({ level, base: { service: "berth" } });
}
