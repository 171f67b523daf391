import { z } from 'zod';

/**
 * Request schemas that let every param through. The SDK's stock schemas strip
 * params they do not know (`prefix`, `filter`, `filters`, `uri` on lists), and a
 * schema failure inside the SDK surfaces as -32603; so the SDK only routes by
 * method here, and our handlers validate params themselves and answer -32602.
 */
function looseRequest<M extends string>(method: M) {
  return z.object({ method: z.literal(method), params: z.unknown().optional() });
}

export const ListResourcesRequest = looseRequest('resources/list');
export const ListResourceTemplatesRequest = looseRequest('resources/templates/list');
export const ReadResourceRequest = looseRequest('resources/read');
export const ResourceMetadataRequest = looseRequest('resources/metadata');
export const SubscribeRequest = looseRequest('resources/subscribe');
export const UnsubscribeRequest = looseRequest('resources/unsubscribe');
export const ListToolsRequest = looseRequest('tools/list');
export const CallToolRequest = looseRequest('tools/call');
export const ListPromptsRequest = looseRequest('prompts/list');
export const GetPromptRequest = looseRequest('prompts/get');
export const CompleteRequest = looseRequest('completion/complete');
