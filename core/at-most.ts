/**
 * Runs `fn` on every item, at most `limit` at once (disk and storage calls overlap without flooding the libuv pool
 * or a server), and resolves to the answers in the items' order once every call ended; rejects with the first
 * failure, after the calls already started have ended, and starts no further item.
 */
export async function atMost<T, R>(limit: number, items: Iterable<T>, fn: (item: T) => Promise<R>): Promise<R[]> {
  const queue = items[Symbol.iterator]();
  const answers: R[] = [];
  const failures: unknown[] = [];
  let index = 0;
  const worker = async () => {
    for (let next = queue.next(); !next.done && !failures.length; next = queue.next()) {
      const i = index++;
      await fn(next.value).then(
        (answer) => void (answers[i] = answer),
        (err) => void failures.push(err),
      );
    }
  };
  await Promise.all(Array.from({ length: limit }, worker));
  if (failures.length) throw failures[0];
  return answers;
}
