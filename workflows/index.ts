export { agentTurn, turnStartedUpdate, callToolUpdate, endTurnUpdate, cancelCallUpdate, statusQuery } from './agentTurn.js';
