/** One row of a start banner: the label padded so that the values line up. */
export const bannerRow = (label: string, value: string) => `  ${`${label}:`.padEnd(15)}${value}`;

/** Bytes as whole MiB, for the banner's memory rows. */
export const mib = (bytes: number) => (bytes / 1048576).toFixed(0);
