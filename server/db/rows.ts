// Row shapes as the pg driver returns them, for repositories that convert columns on the way out.

/** `T` before conversion: numeric and bigint columns (the keys `K`) arrive from pg as strings. */
export type DriverRow<T, K extends keyof T> = Omit<T, K> & { [P in K]: T[P] | string };
