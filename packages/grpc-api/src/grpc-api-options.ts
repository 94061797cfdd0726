import { DEFAULT_MAX_ID_LENGTH } from "@oprc/oprc-id";

/** Context given to {@link GrpcApiOptions.onInternalError}. */
export interface InternalErrorInfo {
  /** The RPC that failed, e.g. `/oprc.DataService/Get`. */
  readonly procedure: string;
}

/** Feature flags and limits shared by {@link createDataServiceImpl} and friends. */
export interface GrpcApiOptions {
  /**
   * Accept string object ids (`object_id_str`, `ODGM_ENABLE_STRING_IDS`). Default `true`.
   * When `false`, a request whose id normalizes to a string id is UNIMPLEMENTED; a string in
   * canonical u64 decimal form (`"42"`) is the numeric id and stays accepted.
   */
  stringIds?: boolean | undefined;
  /**
   * Accept string entry keys (`key_str`, `entries_str`, batch keys; `ODGM_ENABLE_STRING_KEYS`).
   * Default `true`. When `false`, a string key that is not canonical u32 decimal is
   * UNIMPLEMENTED, and so is a ListValues `key_prefix`.
   */
  stringKeys?: boolean | undefined;
  /** Maximum id and key length in UTF-8 bytes (`ODGM_MAX_STRING_ID_LEN`). Default 160. */
  maxIdLength?: number | undefined;
  /** Unicode id mode (`ODGM_STRING_ID_UNICODE`). Default `false` (strict `[a-z0-9._:-]`). */
  unicode?: boolean | undefined;
  /** ListValues/ListObjects page size when the request says 0. Default 100 (spec §4). */
  listDefaultLimit?: number | undefined;
  /** Largest page size; larger requests are capped, not rejected. Default 1024 (spec §4). */
  listMaxLimit?: number | undefined;
  /**
   * Receives the cause of every error answered as INTERNAL (the client only sees
   * "internal error"). Default: writes one line to `console.error`, so causes are never lost.
   */
  onInternalError?: ((cause: unknown, info: InternalErrorInfo) => void) | undefined;
  /**
   * Receives the time, in nanoseconds, spent normalizing each string object id a request
   * carries (`object_id_str`, spec §2), including ids refused as invalid. Default: none
   * (and nothing is timed).
   */
  onIdNormalized?: ((nanoseconds: number) => void) | undefined;
}

/** {@link GrpcApiOptions} with every default applied. */
export interface ResolvedGrpcApiOptions {
  readonly stringIds: boolean;
  readonly stringKeys: boolean;
  readonly maxIdLength: number;
  readonly unicode: boolean;
  readonly listDefaultLimit: number;
  readonly listMaxLimit: number;
  readonly onInternalError: (cause: unknown, info: InternalErrorInfo) => void;
  readonly onIdNormalized: ((nanoseconds: number) => void) | undefined;
}

const defaultOnInternalError = (cause: unknown, info: InternalErrorInfo): void => {
  console.error(`[@oprc/grpc-api] internal error in ${info.procedure}:`, cause);
};

/** Applies defaults and checks ranges; throws a `RangeError` naming the bad option. */
export function resolveGrpcApiOptions(options: GrpcApiOptions = {}): ResolvedGrpcApiOptions {
  const listDefaultLimit = options.listDefaultLimit ?? 100;
  const listMaxLimit = options.listMaxLimit ?? 1024;
  const maxIdLength = options.maxIdLength ?? DEFAULT_MAX_ID_LENGTH;
  for (const [name, v] of [
    ["listDefaultLimit", listDefaultLimit],
    ["listMaxLimit", listMaxLimit],
    ["maxIdLength", maxIdLength],
  ] as const) {
    if (!Number.isSafeInteger(v) || v < 1) {
      throw new RangeError(`[@oprc/grpc-api] ${name} must be a positive integer, got ${v}`);
    }
  }
  if (listDefaultLimit > listMaxLimit) {
    throw new RangeError(
      `[@oprc/grpc-api] listDefaultLimit (${listDefaultLimit}) exceeds listMaxLimit (${listMaxLimit})`,
    );
  }
  return {
    stringIds: options.stringIds ?? true,
    stringKeys: options.stringKeys ?? true,
    maxIdLength,
    unicode: options.unicode ?? false,
    listDefaultLimit,
    listMaxLimit,
    onInternalError: options.onInternalError ?? defaultOnInternalError,
    onIdNormalized: options.onIdNormalized,
  };
}
