// The one polling helper for effects that land after the call returns (fire-and-forget writes, cache
// invalidation over pub/sub, a CLI's change reaching a running server).

/** Polls `check` every 25 ms until it returns a truthy value, which it resolves to; fails after `timeoutMs`. */
export async function eventually<T>(check: () => Promise<T | null | undefined | false>, timeoutMs = 3000): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > until) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 25));
  }
}
