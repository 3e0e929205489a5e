/** A job of the README's AWS Lambda snippet (`./job`): the event and its steps. */
export interface Job {
  id: string;
}

export async function stepOne(_job: Job): Promise<void> {}

export async function stepTwo(_job: Job, _fencingToken: number): Promise<void> {}
