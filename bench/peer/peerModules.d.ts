/*
 * Just enough types for the peer benchmark (bench/peer/*), whose modules are installed outside
 * the repository (see bench/peer/install.ts) and never become project dependencies.
 */
declare module '@temporalio/ai-sdk' {
  export class AiSdkPlugin {
    constructor(options: {
      modelProvider: unknown;
      mcpClientFactories?: Record<string, (args: unknown) => Promise<unknown>>;
      mcpConnectionIdleTimeout?: number;
    });
  }
}
declare module '@temporalio/ai-sdk/workflow' {
  export interface PeerTool {
    execute(input: unknown, options: { toolCallId: string; messages: unknown[] }): Promise<unknown>;
  }
  export class TemporalMCPClient {
    constructor(options: { name: string; clientArgs?: unknown });
    tools(): Promise<Record<string, PeerTool>>;
  }
}
declare module '@ai-sdk/mcp' {
  export function createMCPClient(options: { transport: unknown }): Promise<unknown>;
}
declare module '@ai-sdk/mcp/mcp-stdio' {
  export class Experimental_StdioMCPTransport {
    constructor(options: { command: string; args?: string[]; env?: Record<string, string>; stderr?: string });
  }
}
