import type { FamilySnapshot } from './registry'

/** Prometheus's text format, what every scraper reads. */
export const PROMETHEUS_TEXT = 'text/plain; version=0.0.4; charset=utf-8'
/** OpenMetrics 1.0, sent when the scraper's Accept asks for it. */
export const OPENMETRICS_TEXT = 'application/openmetrics-text; version=1.0.0; charset=utf-8'

export type ExpositionFormat = 'prometheus' | 'openmetrics'

/**
 * The format a scraper asks for: OpenMetrics when its Accept names
 * `application/openmetrics-text` (Prometheus sends it first, weighted), else
 * the text format 0.0.4.
 * @example formatFor('application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5') // 'openmetrics'
 */
export function formatFor(accept: string | null): ExpositionFormat {
  if (!accept) return 'prometheus'
  for (const part of accept.split(',')) {
    const [type, ...parameters] = part.split(';').map((piece) => piece.trim().toLowerCase())
    const weight = parameters.find((parameter) => parameter.startsWith('q='))
    if (type === 'application/openmetrics-text' && (weight === undefined || Number(weight.slice(2)) > 0)) return 'openmetrics'
  }
  return 'prometheus'
}

/**
 * The exposition of `families` in `format`. A counter's samples end in
 * `_total`; in OpenMetrics its family (HELP, TYPE) is named without it, and
 * the text ends with `# EOF`.
 * @example writeExposition(registry.snapshot(), 'prometheus')
 */
export function writeExposition(families: readonly FamilySnapshot[], format: ExpositionFormat): string {
  const open = format === 'openmetrics'
  const lines: string[] = []
  for (const family of families) {
    const familyName = open && family.type === 'counter' ? family.name.replace(/_total$/, '') : family.name
    lines.push(`# HELP ${familyName} ${escapeHelp(family.help)}`, `# TYPE ${familyName} ${family.type}`)
    for (const series of family.series) {
      const pairs = family.labelNames.map((name, index) => `${name}="${escapeLabel(series.labels[index])}"`)
      if (family.type !== 'histogram') {
        lines.push(`${family.name}${braces(pairs)} ${number(series.value)}`)
        continue
      }
      let cumulative = 0
      const bounds = family.bounds ?? []
      series.buckets!.forEach((count, index) => {
        cumulative += count
        const le = index < bounds.length ? bound(bounds[index], open) : '+Inf'
        lines.push(`${family.name}_bucket${braces([...pairs, `le="${le}"`])} ${cumulative}`)
      })
      lines.push(`${family.name}_sum${braces(pairs)} ${number(series.sum!)}`, `${family.name}_count${braces(pairs)} ${series.value}`)
    }
  }
  if (open) lines.push('# EOF')
  return lines.join('\n') + '\n'
}

function braces(pairs: readonly string[]): string {
  return pairs.length ? `{${pairs.join(',')}}` : ''
}

function number(value: number): string {
  if (Number.isNaN(value)) return 'NaN'
  if (value === Infinity) return '+Inf'
  if (value === -Infinity) return '-Inf'
  return String(value)
}

/** OpenMetrics wants a bucket's bound as a canonical float: `1.0`, not `1`. */
function bound(value: number, open: boolean): string {
  return open && Number.isInteger(value) ? value.toFixed(1) : String(value)
}

function escapeLabel(value: string): string {
  return value.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"')
}

function escapeHelp(value: string): string {
  return value.replace(/\\/g, '\\\\').replace(/\n/g, '\\n')
}
