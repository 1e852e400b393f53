export { agentTurn } from './agentTurn.js';
export { dmcpShelf, type ShelfRunInput } from './shelf.js';
export { dmcpEndSession } from './session.js';
export {
  turnStartedUpdate,
  callToolUpdate,
  endTurnUpdate,
  cancelCallUpdate,
  statusQuery,
  shelfChangeUpdate,
  shelfQuery,
} from '../contract/definitions.js';
