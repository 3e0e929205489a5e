import { Injectable } from '@nestjs/common';

/** A document of the app's search index. */
export interface Doc {
  id: string;
}

/** Stands for the app's search index in the README's `LockService` snippet (`./search-index`). */
@Injectable()
export class SearchIndex {
  async export(id: string, _signal: AbortSignal): Promise<string> {
    return `export-${id}.json`;
  }

  async write(_doc: Doc, _fencingToken: number): Promise<void> {}

  async compact(_signal: AbortSignal): Promise<void> {}
}
