export { agentTurn, turnStartedUpdate, callToolUpdate, endTurnUpdate, statusQuery } from './agentTurn.js';
