/**
 * Subscribers for bench/events.ts, in a process of their own (their sockets
 * and memory are not the service's): `bun bench/event-clients.ts <base> <count>
 * <idle|stalled> [types]`. `idle` subscribers read and drop what comes;
 * `stalled` ones read the answer's head, then stop reading (the kernel's
 * buffers fill, then the service's queue). Prints `open <n>` once all are
 * connected, `closed <n>` each time the service closed some; on SIGUSR1 they all
 * read again (a dropped one then sees its end); stops on SIGTERM.
 */
import { connect, type Socket } from 'node:net'

const [base, countText, mode, types = ''] = process.argv.slice(2)
const { hostname, port } = new URL(base!)
const count = Number(countText)
const path = `/api/v1/events${types ? `?types=${types}` : ''}`
const sockets: Socket[] = []
let closed = 0

function open(): Promise<void> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: hostname, port: Number(port) }, () => socket.write(`GET ${path} HTTP/1.1\r\nHost: ${hostname}\r\n\r\n`))
    socket.once('data', () => {
      if (mode === 'stalled') socket.pause()
      resolve()
    })
    if (mode !== 'stalled') socket.on('data', () => {})
    socket.once('error', reject)
    socket.once('close', () => {
      closed++
      console.log(`closed ${closed}`)
    })
    sockets.push(socket)
  })
}

// In batches: 10 000 connects at once would overrun the listen backlog.
for (let done = 0; done < count; done += 500) {
  await Promise.all(Array.from({ length: Math.min(500, count - done) }, open))
}
console.log(`open ${sockets.length}`)
// Reading again: the streams the service dropped end (their FIN waited behind the unread bytes).
process.on('SIGUSR1', () => {
  for (const socket of sockets) socket.on('data', () => {}).resume()
})
process.on('SIGTERM', () => {
  for (const socket of sockets) socket.destroy()
  process.exit(0)
})
setInterval(() => {}, 1 << 30)
