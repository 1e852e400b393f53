/**
 * The AI SDK's providers, loaded when a model step first needs one (optional peer dependencies):
 * a worker that runs no model turns never loads them.
 */
import type { LanguageModel } from 'ai';
import { ModelConfigError } from './modelErrors.js';
import type { ModelEntry } from './modelsFile.js';

/** The variable a provider's key is read from when the entry names none. */
const DEFAULT_KEY_ENV: Record<ModelEntry['provider'], string | undefined> = {
  openai: 'OPENAI_API_KEY',
  anthropic: 'ANTHROPIC_API_KEY',
  'openai-compatible': undefined,
};

/** The provider's model for `entry`, and the key it was given (to keep it out of messages). */
export async function languageModel(
  entry: ModelEntry,
  env: NodeJS.ProcessEnv,
): Promise<{ model: LanguageModel; key?: string }> {
  const keyEnv = entry.apiKeyEnv ?? DEFAULT_KEY_ENV[entry.provider];
  const key = keyEnv === undefined ? undefined : env[keyEnv] || undefined;
  if (
    keyEnv !== undefined &&
    key === undefined &&
    (entry.apiKeyEnv !== undefined || entry.provider !== 'openai-compatible')
  ) {
    throw new ModelConfigError(
      `model ${JSON.stringify(entry.name)} (${entry.source}) reads its key from ${keyEnv}, which is not set on this worker`,
    );
  }
  const base = {
    ...(key !== undefined ? { apiKey: key } : {}),
    ...(entry.baseURL !== undefined ? { baseURL: entry.baseURL } : {}),
  };
  const missing = (pkg: string) =>
    new ModelConfigError(
      `model ${JSON.stringify(entry.name)} uses ${pkg}, which is not installed beside durable-mcp (npm install ${pkg})`,
    );
  switch (entry.provider) {
    case 'openai': {
      const { createOpenAI } = await import('@ai-sdk/openai').catch(() => Promise.reject(missing('@ai-sdk/openai')));
      return { model: createOpenAI(base)(entry.model), ...(key ? { key } : {}) };
    }
    case 'anthropic': {
      const { createAnthropic } = await import('@ai-sdk/anthropic').catch(() =>
        Promise.reject(missing('@ai-sdk/anthropic')),
      );
      return { model: createAnthropic(base)(entry.model), ...(key ? { key } : {}) };
    }
    case 'openai-compatible': {
      const { createOpenAICompatible } = await import('@ai-sdk/openai-compatible').catch(() =>
        Promise.reject(missing('@ai-sdk/openai-compatible')),
      );
      const provider = createOpenAICompatible({
        name: entry.name,
        baseURL: entry.baseURL!,
        includeUsage: true,
        ...(key ? { apiKey: key } : {}),
      });
      return { model: provider(entry.model), ...(key ? { key } : {}) };
    }
  }
}

export function importAi(): Promise<typeof import('ai')> {
  return import('ai').catch(() =>
    Promise.reject(new ModelConfigError('model turns need the AI SDK beside durable-mcp (npm install ai)')),
  );
}
