import type { VideoSettings } from '../../src/domain/video/video-service';

/** The config of issue 8 §1, exactly as written (base_url is replaced by the test's simulator). */
export const ISSUE_VIDEO_YAML = `channels:
  - {name: va, type: video-a, base_url: http://127.0.0.1:9100, key: "\${VIDEO_KEY}", models: [video-3.1, video-3.1-fast]}
  - {name: vb, type: video-b, base_url: http://127.0.0.1:9100, key: "\${VIDEO_KEY}", models: [vendorA-2.7-r2v, vendorC-1.0-r2v]}
  - {name: vc, type: video-c, base_url: http://127.0.0.1:9100, key: "\${VIDEO_KEY}", models: [video3, video3-pro]}
models:
  video-3.1: {per_unit: 0.5}
  video-3.1-fast: {per_unit: 0.25}
  vendorA-2.7-r2v: {per_second: 0.1}
  vendorC-1.0-r2v: {per_second: 0.08}
  video3: {per_unit: 0.3}
  video3-pro: {per_unit: 0.6}
`;

export const VIDEO_KEY = 'video-upstream-key-0123456789';

/** Polls fast so tests take seconds; production polls every 5-10 s. */
export const FAST_POLLS: VideoSettings['pollMs'] = { A: { min: 100, max: 300 }, B: { min: 100, max: 300 }, C: { min: 100, max: 300 } };
