// The CPU time of the workerd process that serves a URL, from Linux's /proc. Each server (product,
// baseline) is its own workerd process, with its Durable Objects, local D1 and queues inside, so the
// process's CPU over a measurement divided by the requests served is what one request costs the
// runtime, deferred work (waitUntil, alarms, queue consumers) included. On a shared machine it moves
// far less than a rate does: another process's load takes time away from a server, not CPU into it.
import { readdirSync, readFileSync, readlinkSync } from "node:fs";

const TICKS_PER_MS = 100 / 1000; // USER_HZ is 100 on Linux

/**
 * The pid of the workerd process that runs the Worker behind a URL, or null when it cannot be told
 * (not Linux, no connection seen). wrangler's harness answers the URL with a proxy workerd that
 * forwards each request to a second workerd, the runtime: the Worker, its Durable Objects, local D1
 * and queues. The runtime is the workerd listening on the port the proxy holds connections to (after
 * a warm-up request); only its CPU is counted, as production has no such proxy.
 */
export function workerdServing(url) {
  try {
    const sockets = tcpSockets();
    const workerds = workerdSockets();
    const port = Number(new URL(url).port);
    const owner = (inode) => workerds.find((w) => w.inodes.has(inode))?.pid ?? null;
    const entry = sockets.find((s) => s.state === LISTEN && s.localPort === port && owner(s.inode) !== null);
    if (!entry) return null;
    const proxy = workerds.find((w) => w.inodes.has(entry.inode));
    const upstreamPorts = new Set(sockets.filter((s) => s.state === ESTABLISHED && proxy.inodes.has(s.inode)).map((s) => s.remotePort));
    const runtimes = new Set(
      sockets
        .filter((s) => s.state === LISTEN && upstreamPorts.has(s.localPort))
        .map((s) => owner(s.inode))
        .filter((pid) => pid !== null && pid !== proxy.pid),
    );
    return runtimes.size === 1 ? [...runtimes][0] : null;
  } catch {
    return null;
  }
}

const LISTEN = "0A";
const ESTABLISHED = "01";

const portOf = (addr) => parseInt(addr.split(":").pop(), 16);

function tcpSockets() {
  const out = [];
  for (const file of ["/proc/net/tcp", "/proc/net/tcp6"]) {
    let text;
    try {
      text = readFileSync(file, "utf8");
    } catch {
      continue;
    }
    for (const line of text.split("\n").slice(1)) {
      const cols = line.trim().split(/\s+/);
      if (cols.length < 10) continue;
      out.push({ localPort: portOf(cols[1]), remotePort: portOf(cols[2]), state: cols[3], inode: cols[9] });
    }
  }
  return out;
}

function workerdSockets() {
  const out = [];
  for (const pid of readdirSync("/proc").filter((d) => /^\d+$/.test(d))) {
    let comm;
    try {
      comm = readFileSync(`/proc/${pid}/comm`, "utf8").trim();
    } catch {
      continue;
    }
    if (comm !== "workerd") continue;
    const inodes = new Set();
    for (const fd of safeReaddir(`/proc/${pid}/fd`)) {
      const inode = /^socket:\[(\d+)\]$/.exec(safeReadlink(`/proc/${pid}/fd/${fd}`) ?? "")?.[1];
      if (inode) inodes.add(inode);
    }
    out.push({ pid: Number(pid), inodes });
  }
  return out;
}

/** User + system CPU of a process in ms, or null when it cannot be read. */
export function cpuMs(pid) {
  if (pid === null) return null;
  try {
    // Fields after the command name (which may hold spaces) start at state; utime and stime are 14 and 15.
    const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ");
    return (Number(fields[11]) + Number(fields[12])) / TICKS_PER_MS;
  } catch {
    return null;
  }
}

function safeReaddir(dir) {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}

function safeReadlink(path) {
  try {
    return readlinkSync(path);
  } catch {
    return null;
  }
}
