export { agentTurn, turnStartedUpdate, callToolUpdate, endTurnUpdate, cancelCallUpdate, statusQuery } from './agentTurn.js';
export { dmcpShelf, shelfChangeUpdate, shelfQuery, type ShelfRunInput } from './shelf.js';
