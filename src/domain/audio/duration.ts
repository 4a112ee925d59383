import { parseBuffer } from 'music-metadata';

/**
 * How long an uploaded audio file plays, read from its header (WAV, MP3, FLAC, OGG, M4A and the other formats
 * music-metadata knows), in milliseconds; undefined when the file is not one it can read. Transcriptions whose
 * upstream reports no duration are billed by it (docs/api.md says what happens without one).
 */
export async function audioDurationMs(data: Buffer, contentType?: string): Promise<number | undefined> {
  try {
    const meta = await parseBuffer(data, contentType ? { mimeType: contentType, size: data.length } : { size: data.length }, { duration: true, skipCovers: true });
    const seconds = meta.format.duration;
    return typeof seconds === 'number' && Number.isFinite(seconds) && seconds > 0 ? Math.ceil(seconds * 1000) : undefined;
  } catch {
    return undefined;
  }
}
