/**
 * One client flooding a service with uncached searches, each a different
 * entry's number (`search=48213`), at CONNECTIONS loops, in a process of its
 * own: bench/quotas.ts times another client meanwhile, and its own event loop
 * must not be the one the flood keeps busy. Runs until SIGTERM, or with
 * `until-limited` until the first 429; then prints what it got as JSON
 * (answered, limited, refused, seconds).
 * @example bun bench/flood-searches.ts http://127.0.0.1:3000/api/v1/content/post 198.51.100.1 100000 32
 */
export {}

const [url, client, entries, connections, mode] = process.argv.slice(2)
const result = { answered: 0, limited: 0, refused: 0, seconds: 0 }
let stopped = false
process.on('SIGTERM', () => (stopped = true))
const started = performance.now()
await Promise.all(
  Array.from({ length: Number(connections) }, async () => {
    while (!stopped) {
      try {
        const response = await fetch(`${url}?search=${1 + Math.floor(Math.random() * Number(entries))}`, { headers: { 'x-forwarded-for': client! } })
        await response.arrayBuffer()
        if (response.status === 200) result.answered++
        else if (response.status === 429) {
          result.limited++
          if (mode === 'until-limited') stopped = true
        } else result.refused++
      } catch {
        result.refused++
      }
    }
  }),
)
result.seconds = (performance.now() - started) / 1000
console.log(JSON.stringify(result))
