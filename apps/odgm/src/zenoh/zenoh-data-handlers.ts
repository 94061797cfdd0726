// Queries and samples on the ODGM key space, served by the node's DataService handlers (the
// same ones gRPC and REST reach, over the same routed data plane), so every status, version
// and validation rule is gRPC's. Payloads are the gRPC messages; errors are error replies
// carrying {"code","message"} JSON.
import { create, type DescMessage, fromBinary, toBinary } from "@bufbuild/protobuf";
import { type Client, Code, ConnectError } from "@connectrpc/connect";
import { Encoding, type Query, type Sample, SampleKind } from "@eclipse-zenoh/zenoh-ts";
import {
  BatchSetValuesRequestSchema,
  type DataService,
  EmptyResponseSchema,
  InvocationRequestSchema,
  InvocationResponseSchema,
  ObjDataSchema,
  ObjectInvocationRequestSchema,
  type OprcFunction,
  ValDataSchema,
  ValueResponseSchema,
} from "@oprc/grpc-api";
import type { Logger } from "pino";
import type { OdgmMetrics } from "../observability/metrics.js";
import {
  isNumericEntryKey,
  KeyError,
  type ObjectAddress,
  type OdgmKey,
  parseOdgmKey,
} from "./zenoh-keys.js";

/** Options of {@link createZenohDataHandlers}. */
export interface ZenohDataHandlersOptions {
  /** The node's DataService, in process (the handlers gRPC serves, over the routed plane). */
  readonly data: Client<typeof DataService>;
  /** The node's OprcFunction, in process (invocations go through the route table like gRPC). */
  readonly functions: Client<typeof OprcFunction>;
  readonly metrics: OdgmMetrics;
  readonly logger: Logger;
  /** Deadline of one call, ms. */
  readonly timeoutMs: number;
  /**
   * Whether this node applies a put or delete sample for `object` (every node subscribed to
   * the key space receives it; exactly one should write). Default: always.
   */
  readonly appliesSample?: (partition: { cls: string; partition: number }) => boolean;
}

/** Attachment of the async invocations a node publishes for fired triggers. */
export const TRIGGER_ATTACHMENT = "odgm-trigger";

/** Serves the ODGM key space. */
export interface ZenohDataHandlers {
  /** Answers one query (always finalizes it). */
  onQuery(query: Query): Promise<void>;
  /** Applies one put or delete sample. */
  onSample(sample: Sample): Promise<void>;
}

/** An error reply's body. */
export interface ZenohErrorBody {
  /** The gRPC status in snake case (`not_found`, `invalid_argument`, …). */
  readonly code: string;
  readonly message: string;
}

/** Options of one in-process call. */
interface CallOpts {
  readonly timeoutMs: number;
  readonly headers?: Record<string, string>;
}

/** EmptyResponse, encoded. */
const EMPTY = toBinary(EmptyResponseSchema, create(EmptyResponseSchema));

const snake = (name: string) => name.replace(/([a-z])([A-Z])/g, "$1_$2").toLowerCase();

/** The error reply for `err`: KeyError and undecodable payloads are `invalid_argument`. */
export function errorBody(err: unknown): ZenohErrorBody {
  if (err instanceof KeyError) return { code: "invalid_argument", message: err.message };
  const ce = ConnectError.from(err);
  return { code: snake(Code[ce.code] ?? "unknown"), message: ce.rawMessage };
}

function decode<S extends DescMessage>(schema: S, bytes: Uint8Array, what: string) {
  try {
    return fromBinary(schema, bytes);
  } catch (err) {
    throw new ConnectError(
      `payload is not a valid ${what} protobuf message: ${(err as Error).message}`,
      Code.InvalidArgument,
    );
  }
}

const identity = (o: ObjectAddress) => ({
  clsId: o.cls,
  partitionId: o.partition,
  ...("numeric" in o.id ? { objectId: o.id.numeric } : { objectIdStr: o.id.str }),
});
const entryKey = (key: string) => (isNumericEntryKey(key) ? { key: Number(key) } : { keyStr: key });

/**
 * Creates the handlers of the ODGM key space (see the odgm README, "Zenoh", for every key,
 * its payload and its reply).
 */
export function createZenohDataHandlers(o: ZenohDataHandlersOptions): ZenohDataHandlers {
  const { data, functions } = o;
  /**
   * Call options of one query or sample: its deadline and, when it carries an attachment
   * other than a node's trigger marker, that attachment as the call's `authorization`
   * header (`Bearer <token>`), checked like any gRPC call's.
   */
  const callOf = (attachment: string | undefined): CallOpts =>
    attachment === undefined || attachment === "" || attachment === TRIGGER_ATTACHMENT
      ? { timeoutMs: o.timeoutMs }
      : { timeoutMs: o.timeoutMs, headers: { authorization: attachment } };
  const count = (kind: string, outcome: string) => o.metrics.zenohRequests.inc({ kind, outcome });

  /** Runs the invocation a key and payload describe. */
  const invoke = async (
    key: Extract<OdgmKey, { kind: "invoke" }>,
    payload: Uint8Array,
    opts: CallOpts,
  ) => {
    if (key.object === undefined) {
      const req = decode(InvocationRequestSchema, payload, "InvocationRequest");
      return functions.invokeFn(
        {
          options: req.options,
          payload: req.payload,
          clsId: key.cls,
          partitionId: key.partition,
          fnId: key.fn,
        },
        opts,
      );
    }
    // The key names the target; identity fields in the payload are ignored.
    const req = decode(ObjectInvocationRequestSchema, payload, "ObjectInvocationRequest");
    return functions.invokeObj(
      {
        options: req.options,
        payload: req.payload,
        ...identity(key.object),
        fnId: key.fn,
      },
      opts,
    );
  };

  /** The reply payload to a query on `key`, or a thrown error. */
  const answer = async (
    key: OdgmKey,
    payload: Uint8Array | undefined,
    opts: CallOpts,
  ): Promise<Uint8Array> => {
    if (key.kind === "invoke") {
      if (key.asyncId !== undefined)
        throw new KeyError("async invocation keys take puts; query …/invokes/<fn> for a result");
      const res = await invoke(key, payload ?? new Uint8Array(0), opts);
      return toBinary(InvocationResponseSchema, res);
    }
    const id = identity(key.object);
    const need = (what: string) => {
      if (payload === undefined)
        throw new ConnectError(`a ${what} query needs a payload`, Code.InvalidArgument);
      return payload;
    };
    switch (key.kind) {
      case "object":
        switch (key.op) {
          case "none": {
            const res = await data.get(id, opts);
            return toBinary(ObjDataSchema, res.obj ?? create(ObjDataSchema));
          }
          case "set": {
            const object = decode(ObjDataSchema, need("set"), "ObjData");
            await data.set({ ...id, object }, opts);
            return EMPTY;
          }
          case "delete":
            await data.delete(id, opts);
            return EMPTY;
          default:
            throw new ConnectError("change keys are published, not queried", Code.InvalidArgument);
        }
      case "value":
        switch (key.op) {
          case "none":
            return toBinary(
              ValueResponseSchema,
              await data.getValue({ ...id, ...entryKey(key.key) }, opts),
            );
          case "set": {
            const value = decode(ValDataSchema, need("set"), "ValData");
            await data.setValue({ ...id, ...entryKey(key.key), value }, opts);
            return EMPTY;
          }
          case "delete":
            await data.deleteValue({ ...id, ...entryKey(key.key) }, opts);
            return EMPTY;
          default:
            throw new ConnectError("change keys are published, not queried", Code.InvalidArgument);
        }
      case "batch":
        await batch(key.object, need("values-batch"), opts);
        return EMPTY;
    }
  };

  const batch = async (
    object: ObjectAddress,
    payload: Uint8Array,
    opts: CallOpts,
  ): Promise<void> => {
    const req = decode(BatchSetValuesRequestSchema, payload, "BatchSetValuesRequest");
    // The key names the object; identity fields in the payload are ignored.
    await data.batchSetValues(
      {
        ...identity(object),
        values: req.values,
        deleteKeys: req.deleteKeys,
        ...(req.expectedObjectVersion === undefined
          ? {}
          : { expectedObjectVersion: req.expectedObjectVersion }),
      },
      opts,
    );
  };

  return {
    async onQuery(query) {
      const keyExpr = query.keyExpr();
      try {
        const key = parseOdgmKey(keyExpr.toString());
        const opts = callOf(query.attachment()?.toString());
        const reply = await answer(key, query.payload()?.toBytes(), opts);
        await query.reply(keyExpr, reply, { encoding: Encoding.APPLICATION_PROTOBUF });
        count("query", "ok");
      } catch (err) {
        const body = errorBody(err);
        count("query", body.code);
        if (body.code === "internal" || body.code === "unknown")
          o.logger.error({ err, key: keyExpr.toString() }, "zenoh query failed");
        await query
          .replyErr(JSON.stringify(body), { encoding: Encoding.APPLICATION_JSON })
          .catch(() => {});
      } finally {
        await query.finalize().catch(() => {});
      }
    },

    async onSample(sample) {
      const kind = sample.kind() === SampleKind.DELETE ? "delete" : "put";
      const keyExpr = sample.keyexpr().toString();
      const attachment = sample.attachment()?.toString();
      const opts = callOf(attachment);
      try {
        const key = parseOdgmKey(keyExpr);
        if ((key.kind === "object" || key.kind === "value") && key.op === "change") return; // events
        if (key.kind === "invoke") {
          if (key.asyncId === undefined || kind === "delete")
            throw new KeyError(`${kind} on ${JSON.stringify(keyExpr)} is not served; query it`);
          // A node's fired trigger: already delivered through the function route.
          if (attachment === TRIGGER_ATTACHMENT) return;
          if (o.appliesSample !== undefined && !o.appliesSample(key)) return;
          const res = await invoke(key, sample.payload().toBytes(), opts);
          count(kind, "ok");
          o.logger.debug({ key: keyExpr, status: res.status }, "async invocation done");
          return;
        }
        if (o.appliesSample !== undefined && !o.appliesSample(key.object)) return;
        const id = identity(key.object);
        const payload = sample.payload().toBytes();
        if (key.kind === "object" && key.op === "none") {
          if (kind === "delete") await data.delete(id, opts);
          else await data.set({ ...id, object: decode(ObjDataSchema, payload, "ObjData") }, opts);
        } else if (key.kind === "value" && key.op === "none") {
          const k = entryKey(key.key);
          if (kind === "delete") await data.deleteValue({ ...id, ...k }, opts);
          else
            await data.setValue(
              { ...id, ...k, value: decode(ValDataSchema, payload, "ValData") },
              opts,
            );
        } else if (key.kind === "batch" && kind === "put") {
          await batch(key.object, payload, opts);
        } else {
          throw new KeyError(`${kind} on ${JSON.stringify(keyExpr)} is not served; use a query`);
        }
        count(kind, "ok");
      } catch (err) {
        const body = errorBody(err);
        count(kind, body.code);
        o.logger.warn({ key: keyExpr, kind, ...body }, "zenoh sample refused");
      }
    },
  };
}
