/**
 * What a refusal or failure from Temporal was, by its type: the one place the API, the CLI and the
 * client look into an error's causes, so none of them reads a message's text to decide.
 */
export { applicationFailureOf, failureTypeOf, findCause } from '../workflows/failures.js';
