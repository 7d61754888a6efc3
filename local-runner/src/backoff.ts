/** Exponential backoff: 1 s, 2 s, 4 s … capped, reset after a success. */
export function createBackoff(initialMs = 1000, maxMs = 15_000): { next(): number; reset(): void } {
  let attempt = 0;
  return {
    next() {
      const delay = Math.min(maxMs, initialMs * 2 ** attempt);
      attempt += 1;
      return delay;
    },
    reset() {
      attempt = 0;
    },
  };
}

/** Resolves after `ms`, or early (without throwing) when `signal` aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const timer = setTimeout(done, ms);
    signal?.addEventListener("abort", done, { once: true });
    function done(): void {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    }
  });
}
