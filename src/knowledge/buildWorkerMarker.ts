/**
 * The mark of a build worker's `workerData`, apart from the worker's module (`buildWorker.ts`): the main thread
 * (`buildThreads.ts`) needs the mark, but importing the worker's module would run its start-up check (which looks
 * up `node:worker_threads`) in every process that imports the engine.
 */
export const BUILD_WORKER_MARKER = "lexground.buildWorker";
