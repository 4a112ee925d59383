import type { EmbeddingsRequest, EmbeddingsResult, UpstreamCall } from '../../domain/ports/upstream';
import { UpstreamError } from '../../domain/ports/upstream-error';
import { readJsonObject } from '../http';
import { bedrockModelCall } from './bedrock';
import { embeddingsResult, textInputs, type Embedded } from './embedded';
import { mapInChunks } from './in-chunks';

/**
 * /v1/embeddings on a `bedrock` channel, through InvokeModel with each family's own body: Amazon Titan text
 * embeddings (`amazon.titan-embed-text-*`, one text per call: `{inputText, dimensions, normalize}`) and Cohere Embed
 * (`cohere.embed-*`, up to 96 texts a call: `{texts, input_type, truncate}`). Billed by the tokens Bedrock counted
 * (Titan's `inputTextTokenCount`, Cohere's `X-Amzn-Bedrock-Input-Token-Count`).
 */
export async function bedrockEmbeddings(req: EmbeddingsRequest, call: UpstreamCall): Promise<EmbeddingsResult> {
  const inputs = textInputs(req);
  const model = call.upstreamModel.toLowerCase();
  const embedded = model.includes('titan-embed') ? await titan(inputs, req, call) : model.includes('cohere.embed') ? await cohere(inputs, req, call) : unsupported(call);
  return embeddingsResult(req, embedded);
}

function unsupported(call: UpstreamCall): never {
  throw new UpstreamError('status', `${call.upstreamModel} is not an embedding model this channel type serves (Titan and Cohere embed models are)`, 400, 'unsupported_endpoint');
}

const isVector = (v: unknown): v is number[] => Array.isArray(v) && v.every((x) => typeof x === 'number');

/** Titan embeds one text per call: eight calls at a time. */
function titan(inputs: string[], req: EmbeddingsRequest, call: UpstreamCall): Promise<Embedded[]> {
  return mapInChunks(inputs, 1, 8, async ([inputText]) => {
    const body = { inputText, ...(typeof req.dimensions === 'number' ? { dimensions: req.dimensions } : {}), normalize: true };
    const answer = await readJsonObject(await bedrockModelCall(call, 'invoke', body, false));
    if (!isVector(answer.embedding)) throw new UpstreamError('protocol', 'the upstream answer has no embedding');
    return [{ vector: answer.embedding, tokens: Number.isSafeInteger(answer.inputTextTokenCount) ? (answer.inputTextTokenCount as number) : null }];
  });
}

/** Cohere embeds up to 96 texts a call; the call's token count is carried by its first text. */
function cohere(inputs: string[], req: EmbeddingsRequest, call: UpstreamCall): Promise<Embedded[]> {
  const extra = req as { input_type?: unknown; truncate?: unknown };
  return mapInChunks(inputs, 96, 4, async (texts) => {
    const body = {
      texts,
      input_type: typeof extra.input_type === 'string' ? extra.input_type : 'search_document',
      truncate: typeof extra.truncate === 'string' ? extra.truncate : 'END',
      ...(typeof req.dimensions === 'number' ? { output_dimension: req.dimensions } : {}),
    };
    const res = await bedrockModelCall(call, 'invoke', body, false);
    const counted = Number(res.headers['x-amzn-bedrock-input-token-count']);
    const answer = await readJsonObject(res);
    const got = Array.isArray(answer.embeddings) ? answer.embeddings : (answer.embeddings as { float?: unknown } | undefined)?.float;
    if (!Array.isArray(got) || got.length !== texts.length || !got.every(isVector)) throw new UpstreamError('protocol', 'the upstream answer has no embeddings');
    return (got as number[][]).map((vector, k) => ({ vector, tokens: k > 0 ? 0 : Number.isSafeInteger(counted) && counted >= 0 ? counted : null }));
  });
}
