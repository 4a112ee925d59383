/**
 * What a process started, closed in reverse order. Each start-up step registers its own clean-up right
 * after it succeeds, so a failure half-way through stops exactly what had been started.
 */
export class Resources {
  private readonly steps: { name: string; close: () => Promise<void> | void }[] = [];

  add(name: string, close: () => Promise<void> | void): void {
    this.steps.push({ name, close });
  }

  /** Closes everything, last started first; a failing step is reported and the rest still run. */
  async closeAll(report: (line: string) => void): Promise<boolean> {
    let ok = true;
    for (let step = this.steps.pop(); step; step = this.steps.pop()) {
      try {
        await step.close();
      } catch (err) {
        ok = false;
        report(`could not stop ${step.name}: ${(err as Error).message}`);
      }
    }
    return ok;
  }
}
