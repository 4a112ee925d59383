import { z } from 'zod';

/** A file part of a multipart form, as OpenAPI describes uploads: a string of format `binary`. */
export const binaryFile = (description: string) => z.string().meta({ format: 'binary', description });
