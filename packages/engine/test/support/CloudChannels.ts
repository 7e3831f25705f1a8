/**
 * The cloud channels (Vertex AI, Bedrock with SigV4 and with an API key) and
 * their prices that the engine's cloud tests and the traced web handler share,
 * pointed at the fake upstream.
 */
import { TEST_API_KEY, TEST_CREDENTIALS } from "@modelgate/fake-upstream"

export const cloudChannels = (upstream: string, keyFile: Record<string, string>) => [
  {
    name: "vertex",
    type: "vertex",
    base_url: upstream,
    project: "fake-project",
    location: "us-east5",
    credentials: keyFile,
    models: ["gemini-vertex", "claude-vertex", "embed-vertex", "gemini-embed-vertex"],
    model_map: {
      "gemini-vertex": "gemini-2.5-flash",
      "claude-vertex": "claude-sonnet-4-5@20250929",
      "embed-vertex": "text-embedding-005",
      "gemini-embed-vertex": "gemini-embedding-001"
    }
  },
  {
    name: "bedrock",
    type: "bedrock",
    base_url: upstream,
    region: "us-east-1",
    access_key_id: TEST_CREDENTIALS.accessKeyId,
    secret_access_key: TEST_CREDENTIALS.secretAccessKey,
    models: ["claude-bedrock", "nova-pro", "titan-embed", "cohere-embed"],
    model_map: {
      "claude-bedrock": "us.anthropic.claude-sonnet-4-5-20250929-v1:0",
      "nova-pro": "amazon.nova-pro-v1:0",
      "titan-embed": "amazon.titan-embed-text-v2:0",
      "cohere-embed": "cohere.embed-english-v3"
    }
  },
  {
    name: "bedrock-key",
    type: "bedrock",
    base_url: upstream,
    region: "us-east-1",
    api_key: TEST_API_KEY,
    models: ["nova-key"],
    model_map: { "nova-key": "amazon.nova-pro-v1:0" }
  }
]

export const cloudModels = {
  "gemini-vertex": { input: 1, output: 2 },
  "claude-vertex": { input: 3, output: 15 },
  "embed-vertex": { input: 0.1, embedding: true },
  "gemini-embed-vertex": { input: 0.15, embedding: true },
  "titan-embed": { input: 0.02, embedding: true },
  "cohere-embed": { input: 0.1, embedding: true },
  "claude-bedrock": { input: 3, output: 15 },
  "nova-pro": { input: 0.8, output: 3.2 },
  "nova-key": { input: 0.8, output: 3.2 }
}
