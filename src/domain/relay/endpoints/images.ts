import type { ImageEditRequest, ImagesRequest, ImagesResult, UpstreamAdapter } from '../../ports/upstream';
import type { UnaryEndpoint } from '../engine';

/** POST /v1/images/generations and /v1/images/edits: billed per image the upstream returned. */
const perImage = {
  hold: (req: { n?: number }) => ({ units: req.n ?? 1 }),
  metered: (r: ImagesResult) => ({ units: r.body.data.length, unit: 'images' }),
  body: (r: ImagesResult) => r.body,
};

export const imagesGenerateEndpoint: UnaryEndpoint<ImagesRequest, UpstreamAdapter, ImagesResult, ImagesResult['body']> = {
  ...perImage,
  name: 'image generation',
  reason: 'imagesGenerate',
  adapterOf: (adapters, channel) => (adapters.chat[channel.type]?.imagesGenerate ? adapters.chat[channel.type] : undefined),
  call: (adapter, req, call) => adapter.imagesGenerate!(req, call),
};

export const imagesEditEndpoint: UnaryEndpoint<ImageEditRequest, UpstreamAdapter, ImagesResult, ImagesResult['body']> = {
  ...perImage,
  name: 'image edits',
  reason: 'imagesEdit',
  adapterOf: (adapters, channel) => (adapters.chat[channel.type]?.imagesEdit ? adapters.chat[channel.type] : undefined),
  call: (adapter, req, call) => adapter.imagesEdit!(req, call),
};
