/** One step of a use case: its work on the use case's state and, should a later step fail, how to undo it. */
export interface Step<S> {
  /** Names the step where a compensation that failed is reported. */
  name: string;
  /** Does the step's work; `'done'` ends the use case here, successfully (the later steps do not run). */
  run(state: S): Promise<void | 'done'>;
  /** Undoes what `run` did; called only when `run` finished and a later step threw. */
  compensate?(state: S): Promise<void>;
}

/**
 * Runs `steps` in order on `state`. When one throws, the steps that finished are compensated, last
 * first, and the error is thrown again; a compensation that throws goes to `failed` and the others
 * still run (Medusa's workflow steps and their compensation are the model).
 */
export async function runSteps<S>(
  state: S,
  steps: Step<S>[],
  failed: (step: string, err: unknown) => void,
): Promise<S> {
  const finished: Step<S>[] = [];
  try {
    for (const step of steps) {
      const outcome = await step.run(state);
      finished.push(step);
      if (outcome === 'done') break;
    }
    return state;
  } catch (err) {
    for (const step of finished.reverse()) await step.compensate?.(state).catch((e: unknown) => failed(step.name, e));
    throw err;
  }
}
