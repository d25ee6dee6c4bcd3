import type { LogLevel } from './config'

const SEVERITY: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40, silent: 100 }

export type LogFields = Record<string, unknown>

/** One JSON object per line on stdout: `{"time":…,"level":…,"msg":…, …fields}`. */
export interface Logger {
  debug(msg: string, fields?: LogFields): void
  info(msg: string, fields?: LogFields): void
  warn(msg: string, fields?: LogFields): void
  error(msg: string, fields?: LogFields): void
  /** Whether a line at `level` would be written: a caller may skip gathering its fields (absent: always). */
  writes?(level: Exclude<LogLevel, 'silent'>): boolean
}

/**
 * @example createLogger('info').warn('slow query', { ms: 812 })
 */
export function createLogger(level: LogLevel, write: (line: string) => void = (line) => process.stdout.write(line)): Logger {
  const threshold = SEVERITY[level]
  const log = (at: Exclude<LogLevel, 'silent'>) => (msg: string, fields?: LogFields) => {
    if (SEVERITY[at] < threshold) return
    write(JSON.stringify({ time: new Date().toISOString(), level: at, msg, ...fields }, errorReplacer) + '\n')
  }
  return { debug: log('debug'), info: log('info'), warn: log('warn'), error: log('error'), writes: (at) => SEVERITY[at] >= threshold }
}

function errorReplacer(_key: string, value: unknown): unknown {
  if (value instanceof Error) {
    return { name: value.name, message: value.message, code: (value as { code?: unknown }).code, stack: value.stack }
  }
  return value
}
