/** A start-up failure; the message names the plugin id, package or configuration key at fault. */
export class KernelError extends Error {
  override name = 'KernelError';
}
