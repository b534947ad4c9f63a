/**
 * Explicit timeout of every skill test (issue 15): vitest's 5 s default failed on a busy machine
 * when a test was the first to load the BPE tokenizer tables. Nothing here should take more
 * than a second on an idle machine; the margin is for several suites sharing two cores.
 */
export const SKILL_TEST_TIMEOUT = 60_000;
