// A loopback router for the zenoh remote-api WebSocket protocol, the subset that
// @eclipse-zenoh/zenoh-ts 1.10.x speaks (../shared/spec/zenoh.md §1–3). Every WebSocket
// connection is one zenoh session; routing between them is by key-expression intersection,
// computed with zenoh-ts's own KeyExpr (the zenoh-keyexpr crate compiled to WASM).
//
// Fidelity: declarations take effect synchronously (zenohd propagates them asynchronously);
// no HLC timestamps are added; BEST_MATCHING's "complete" rule is approximated as "a
// complete queryable whose key expression includes the query's"; no storages, no `_time`.
import { randomBytes, randomUUID } from "node:crypto";
import type { AddressInfo } from "node:net";
import { KeyExpr } from "@eclipse-zenoh/zenoh-ts";
import { type WebSocket, WebSocketServer } from "ws";
import { WireError, WireReader, WireWriter } from "./wire-codec.js";

/** Options of {@link createZenohRouter}. */
export interface ZenohRouterOptions {
  /** TCP port of the WebSocket listener; default 0 (any free port). */
  readonly port?: number;
  /** Listen address; default `127.0.0.1` (a test router is loopback only by default). */
  readonly host?: string;
  /** Timeout of a get whose request carries 0 ms; default 10 000 (zenoh-ts's default). */
  readonly defaultQueryTimeoutMs?: number;
}

/** Counters for a test's assertions. */
export interface ZenohRouterStats {
  /** Open sessions (WebSocket connections). */
  readonly sessions: number;
  readonly subscribers: number;
  readonly queryables: number;
  readonly livelinessTokens: number;
  /** Gets waiting for their final. */
  readonly pendingQueries: number;
  /** Messages that could not be decoded or were not understood. */
  readonly malformedMessages: number;
}

/** A running loopback router. */
export interface ZenohRouter {
  /** The bound port. */
  readonly port: number;
  /** The zenoh-ts locator of this router, `ws/127.0.0.1:<port>`. */
  readonly locator: string;
  stats(): ZenohRouterStats;
  /** Closes every session (their tokens go, their pending queries finish) and the listener. */
  close(): Promise<void>;
}

// Client -> router message ids (zenoh-ts OutRemoteMessageId).
const In = {
  DeclarePublisher: 0,
  UndeclarePublisher: 1,
  DeclareSubscriber: 2,
  UndeclareSubscriber: 3,
  DeclareQueryable: 4,
  UndeclareQueryable: 5,
  DeclareQuerier: 6,
  UndeclareQuerier: 7,
  DeclareLivelinessToken: 8,
  UndeclareLivelinessToken: 9,
  DeclareLivelinessSubscriber: 10,
  UndeclareLivelinessSubscriber: 11,
  GetSessionInfo: 12,
  GetTimestamp: 13,
  Put: 14,
  Delete: 15,
  PublisherPut: 16,
  PublisherDelete: 17,
  Get: 18,
  QuerierGet: 19,
  LivelinessGet: 20,
  ReplyOk: 21,
  ReplyDel: 22,
  ReplyErr: 23,
  QueryResponseFinal: 24,
  Ping: 25,
  GetTransports: 31,
  GetLinks: 32,
} as const;

// Router -> client message ids (zenoh-ts InRemoteMessageId).
const Out = {
  Ping: 0,
  Ok: 1,
  Error: 2,
  Timestamp: 3,
  SessionInfo: 4,
  Sample: 5,
  Query: 6,
  Reply: 7,
  QueryResponseFinal: 8,
  Transports: 11,
  Links: 12,
} as const;

const REQUEST_FLAG = 0x80;
const Locality = { SessionLocal: 0, Remote: 1, Any: 2 } as const;
const Target = { BestMatching: 0, All: 1, AllComplete: 2 } as const;
const Consolidation = { Auto: 0, None: 1, Monotonic: 2, Latest: 3 } as const;
const ReplyKe = { Any: 0, MatchingQuery: 1 } as const;
const SampleKind = { Put: 0, Delete: 1 } as const;

interface Encoding {
  readonly id: number;
  readonly schema: string;
}
const DEFAULT_ENCODING: Encoding = { id: 0, schema: "" };
interface Timestamp {
  readonly ntp64: bigint;
  readonly zid: Uint8Array;
}
interface Sample {
  readonly keyExpr: string;
  readonly payload: Uint8Array;
  readonly kind: number;
  readonly encoding: Encoding;
  readonly attachment: Uint8Array | undefined;
  readonly timestamp: Timestamp | undefined;
  readonly qos: number;
}

interface Subscriber {
  readonly ke: KeyExpr;
  readonly origin: number;
}
interface Queryable {
  readonly ke: KeyExpr;
  readonly complete: boolean;
  readonly origin: number;
}
interface Publisher {
  readonly ke: string;
  readonly encoding: Encoding;
  readonly qos: number;
}
interface Querier {
  readonly ke: string;
  readonly qos: number;
  readonly qs: number;
  readonly timeoutMs: number;
}

interface Session {
  readonly ws: WebSocket;
  readonly uuid: string;
  readonly zid: Uint8Array;
  readonly publishers: Map<number, Publisher>;
  readonly subscribers: Map<number, Subscriber>;
  readonly queryables: Map<number, Queryable>;
  readonly queriers: Map<number, Querier>;
  readonly tokens: Map<number, string>;
  readonly livelinessSubscribers: Map<number, KeyExpr>;
  open: boolean;
}

interface PendingGet {
  readonly getter: Session;
  readonly getId: number;
  readonly ke: KeyExpr;
  readonly consolidation: number;
  readonly replyKe: number;
  /** Router query ids handed to queryables that have not finalized yet. */
  readonly outstanding: Set<number>;
  /** LATEST: newest reply per key, emitted at the final; MONOTONIC: newest seen per key. */
  readonly perKey: Map<string, Sample>;
  timer: NodeJS.Timeout | undefined;
  done: boolean;
}

interface QueryRoute {
  readonly get: PendingGet;
  readonly responder: Session;
}

/**
 * Starts a loopback zenoh remote-api router: a test double for zenohd with the
 * `zenoh-plugin-remote-api`, protocol-compatible with `@eclipse-zenoh/zenoh-ts` 1.10.x.
 *
 * @example
 * ```ts
 * const router = await createZenohRouter({ port: 0 });
 * const session = await open(new Config(router.locator));
 * ```
 */
export async function createZenohRouter(options: ZenohRouterOptions = {}): Promise<ZenohRouter> {
  const defaultTimeoutMs = options.defaultQueryTimeoutMs ?? 10_000;
  const routerZid = randomBytes(16);
  const sessions = new Set<Session>();
  const routes = new Map<number, QueryRoute>();
  const pendingGets = new Set<PendingGet>();
  let nextQueryId = 1;
  let malformed = 0;

  const wss = new WebSocketServer({
    port: options.port ?? 0,
    host: options.host ?? "127.0.0.1",
    perMessageDeflate: false,
  });
  await new Promise<void>((resolve, reject) => {
    wss.once("listening", resolve);
    wss.once("error", reject);
  });
  const port = (wss.address() as AddressInfo).port;

  function send(session: Session, message: Uint8Array): void {
    if (session.open) session.ws.send(message);
  }
  function header(w: WireWriter, id: number, seq: number | undefined): WireWriter {
    if (seq === undefined) return w.u8(id);
    return w.u8(id | REQUEST_FLAG).u32(seq);
  }
  function writeEncoding(w: WireWriter, e: Encoding): void {
    w.u16(e.id).str(e.schema);
  }
  function writeSample(w: WireWriter, s: Sample): void {
    w.str(s.keyExpr).bytesField(s.payload).u8(s.kind);
    writeEncoding(w, s.encoding);
    w.opt(s.attachment, (a) => w.bytesField(a));
    w.opt(s.timestamp, (t) => w.u64(t.ntp64).bytesField(t.zid));
    w.u8(s.qos);
  }
  function readEncoding(r: WireReader): Encoding {
    return { id: r.u16(), schema: r.str() };
  }
  function readTimestamp(r: WireReader): Timestamp {
    return { ntp64: r.u64(), zid: r.bytesField() };
  }
  function keyExpr(s: string): KeyExpr {
    try {
      return new KeyExpr(s);
    } catch (err) {
      throw new WireError(`invalid key expression ${JSON.stringify(s)}: ${String(err)}`);
    }
  }
  const localityAllows = (allowed: number, from: Session, to: Session): boolean =>
    allowed === Locality.Any || (allowed === Locality.SessionLocal) === (from === to);
  const localityOf = (qos: number): number => (qos >> 6) & 0b11;

  // --- pub/sub ---------------------------------------------------------------------------
  function publish(from: Session, sample: Sample): void {
    const ke = keyExpr(sample.keyExpr);
    const destination = localityOf(sample.qos);
    for (const to of sessions) {
      if (!localityAllows(destination, from, to)) continue;
      for (const [id, sub] of to.subscribers) {
        if (!localityAllows(sub.origin, from, to) || !sub.ke.intersects(ke)) continue;
        const w = header(new WireWriter(), Out.Sample, undefined).u32(id);
        writeSample(w, sample);
        send(to, w.finish());
      }
    }
  }

  // --- liveliness ------------------------------------------------------------------------
  function livelinessSample(ke: string, kind: number): Sample {
    return {
      keyExpr: ke,
      payload: new Uint8Array(0),
      kind,
      encoding: DEFAULT_ENCODING,
      attachment: undefined,
      timestamp: undefined,
      qos: 5 | (1 << 5) | (Locality.Any << 6),
    };
  }
  function announceToken(ke: string, kind: number): void {
    const k = keyExpr(ke);
    for (const to of sessions)
      for (const [id, sub] of to.livelinessSubscribers) {
        if (!sub.intersects(k)) continue;
        const w = header(new WireWriter(), Out.Sample, undefined).u32(id);
        writeSample(w, livelinessSample(ke, kind));
        send(to, w.finish());
      }
  }

  // --- queries ---------------------------------------------------------------------------
  function sendReply(get: PendingGet, sample: Sample): void {
    const w = header(new WireWriter(), Out.Reply, undefined).u32(get.getId).bool(true);
    writeSample(w, sample);
    send(get.getter, w.finish());
  }
  function finishGet(get: PendingGet): void {
    if (get.done) return;
    get.done = true;
    if (get.timer) clearTimeout(get.timer);
    for (const qid of get.outstanding) routes.delete(qid);
    get.outstanding.clear();
    pendingGets.delete(get);
    if (get.consolidation === Consolidation.Latest)
      for (const sample of get.perKey.values()) sendReply(get, sample);
    send(
      get.getter,
      header(new WireWriter(), Out.QueryResponseFinal, undefined).u32(get.getId).finish(),
    );
  }
  function newer(a: Sample, than: Sample): boolean {
    if (a.timestamp === undefined || than.timestamp === undefined) return false;
    return a.timestamp.ntp64 > than.timestamp.ntp64;
  }
  function deliverReply(get: PendingGet, sample: Sample): void {
    if (get.replyKe === ReplyKe.MatchingQuery && !keyExpr(sample.keyExpr).intersects(get.ke))
      return;
    const previous = get.perKey.get(sample.keyExpr);
    switch (get.consolidation) {
      case Consolidation.None:
        sendReply(get, sample);
        return;
      case Consolidation.Monotonic:
        if (previous && !newer(sample, previous)) return;
        get.perKey.set(sample.keyExpr, sample);
        sendReply(get, sample);
        return;
      default:
        if (!previous || newer(sample, previous)) get.perKey.set(sample.keyExpr, sample);
    }
  }
  function startGet(
    getter: Session,
    getId: number,
    ke: KeyExpr,
    params: string,
    payload: Uint8Array | undefined,
    encoding: Encoding | undefined,
    attachment: Uint8Array | undefined,
    qos: number,
    qs: number,
    timeoutMs: number,
  ): void {
    const target = qs & 0b11;
    let consolidation = (qs >> 2) & 0b11;
    if (consolidation === Consolidation.Auto)
      consolidation = params.includes("_time") ? Consolidation.None : Consolidation.Latest;
    const replyKe = (qs >> 4) & 0b1;
    const get: PendingGet = {
      getter,
      getId,
      ke,
      consolidation,
      replyKe,
      outstanding: new Set(),
      perKey: new Map(),
      timer: undefined,
      done: false,
    };
    const destination = localityOf(qos);
    const candidates: { session: Session; id: number; q: Queryable }[] = [];
    for (const session of sessions) {
      if (!localityAllows(destination, getter, session)) continue;
      for (const [id, q] of session.queryables)
        if (localityAllows(q.origin, getter, session) && q.ke.intersects(ke))
          candidates.push({ session, id, q });
    }
    const complete = candidates.filter((c) => c.q.complete && c.q.ke.includes(ke));
    const chosen =
      target === Target.All
        ? candidates
        : target === Target.AllComplete
          ? complete
          : complete.length > 0
            ? complete.slice(0, 1)
            : candidates;
    pendingGets.add(get);
    if (chosen.length === 0) {
      finishGet(get);
      return;
    }
    get.timer = setTimeout(() => finishGet(get), timeoutMs > 0 ? timeoutMs : defaultTimeoutMs);
    get.timer.unref();
    for (const c of chosen) {
      const queryId = nextQueryId++;
      nextQueryId = nextQueryId > 0xffffffff ? 1 : nextQueryId;
      routes.set(queryId, { get, responder: c.session });
      get.outstanding.add(queryId);
      const w = header(new WireWriter(), Out.Query, undefined)
        .u32(c.id)
        .u32(queryId)
        .str(ke.toString())
        .str(params);
      w.opt(payload, (p) => w.bytesField(p));
      w.opt(encoding, (e) => writeEncoding(w, e));
      w.opt(attachment, (a) => w.bytesField(a));
      w.u8(replyKe);
      send(c.session, w.finish());
    }
  }
  function routeOf(from: Session, queryId: number): QueryRoute | undefined {
    const route = routes.get(queryId);
    return route && route.responder === from ? route : undefined;
  }
  function finalizeQuery(queryId: number): void {
    const route = routes.get(queryId);
    if (!route) return;
    routes.delete(queryId);
    route.get.outstanding.delete(queryId);
    if (route.get.outstanding.size === 0) finishGet(route.get);
  }

  // --- per-message handling --------------------------------------------------------------
  function handle(session: Session, data: Uint8Array): void {
    const r = new WireReader(data);
    const first = r.u8();
    const id = first & ~REQUEST_FLAG;
    const seq = (first & REQUEST_FLAG) !== 0 ? r.u32() : undefined;
    const ok = () => {
      if (seq !== undefined) send(session, header(new WireWriter(), Out.Ok, seq).u8(id).finish());
    };
    const error = (message: string) => {
      if (seq !== undefined)
        send(session, header(new WireWriter(), Out.Error, seq).str(message).finish());
    };
    const declare = <T>(table: Map<number, T>, key: number, value: T, what: string) => {
      if (table.has(key)) return error(`${what} with id ${key} already declared`);
      table.set(key, value);
      ok();
    };
    const undeclare = (table: Map<number, unknown>, key: number, what: string) => {
      if (!table.delete(key)) return error(`unknown ${what} id ${key}`);
      ok();
    };
    try {
      switch (id) {
        case In.Ping:
          send(session, header(new WireWriter(), Out.Ping, seq).str(session.uuid).finish());
          return;
        case In.DeclarePublisher: {
          const pid = r.u32();
          const ke = keyExpr(r.str()).toString();
          const encoding = readEncoding(r);
          declare(session.publishers, pid, { ke, encoding, qos: r.u8() }, "publisher");
          return;
        }
        case In.UndeclarePublisher:
          undeclare(session.publishers, r.u32(), "publisher");
          return;
        case In.DeclareSubscriber: {
          const sid = r.u32();
          const ke = keyExpr(r.str());
          declare(session.subscribers, sid, { ke, origin: r.u8() }, "subscriber");
          return;
        }
        case In.UndeclareSubscriber:
          undeclare(session.subscribers, r.u32(), "subscriber");
          return;
        case In.DeclareQueryable: {
          const qid = r.u32();
          const ke = keyExpr(r.str());
          const complete = r.bool();
          declare(session.queryables, qid, { ke, complete, origin: r.u8() }, "queryable");
          return;
        }
        case In.UndeclareQueryable:
          undeclare(session.queryables, r.u32(), "queryable");
          return;
        case In.DeclareQuerier: {
          const qid = r.u32();
          const ke = keyExpr(r.str()).toString();
          const qos = r.u8();
          const qs = r.u8();
          declare(session.queriers, qid, { ke, qos, qs, timeoutMs: r.u32() }, "querier");
          return;
        }
        case In.UndeclareQuerier:
          undeclare(session.queriers, r.u32(), "querier");
          return;
        case In.DeclareLivelinessToken: {
          const tid = r.u32();
          const ke = keyExpr(r.str()).toString();
          if (session.tokens.has(tid)) {
            error(`liveliness token with id ${tid} already declared`);
            return;
          }
          session.tokens.set(tid, ke);
          ok();
          announceToken(ke, SampleKind.Put);
          return;
        }
        case In.UndeclareLivelinessToken: {
          const tid = r.u32();
          const ke = session.tokens.get(tid);
          if (ke === undefined) {
            error(`unknown liveliness token id ${tid}`);
            return;
          }
          session.tokens.delete(tid);
          ok();
          announceToken(ke, SampleKind.Delete);
          return;
        }
        case In.DeclareLivelinessSubscriber: {
          const sid = r.u32();
          const ke = keyExpr(r.str());
          const history = r.bool();
          if (session.livelinessSubscribers.has(sid)) {
            error(`liveliness subscriber with id ${sid} already declared`);
            return;
          }
          session.livelinessSubscribers.set(sid, ke);
          ok();
          if (history)
            for (const other of sessions)
              for (const token of other.tokens.values()) {
                if (!ke.intersects(keyExpr(token))) continue;
                const w = header(new WireWriter(), Out.Sample, undefined).u32(sid);
                writeSample(w, livelinessSample(token, SampleKind.Put));
                send(session, w.finish());
              }
          return;
        }
        case In.UndeclareLivelinessSubscriber:
          undeclare(session.livelinessSubscribers, r.u32(), "liveliness subscriber");
          return;
        case In.GetSessionInfo: {
          const w = header(new WireWriter(), Out.SessionInfo, seq).bytesField(session.zid);
          w.u8(1).bytesField(routerZid); // routers: this one
          w.u8(0); // peers: none
          send(session, w.finish());
          return;
        }
        case In.GetTimestamp: {
          const now = Date.now();
          const seconds = BigInt(Math.floor(now / 1000));
          const fraction = BigInt(Math.floor(((now % 1000) / 1000) * 2 ** 32));
          const w = header(new WireWriter(), Out.Timestamp, seq)
            .u64((seconds << 32n) | fraction)
            .bytesField(session.zid);
          send(session, w.finish());
          return;
        }
        case In.Put: {
          const keyExprStr = keyExpr(r.str()).toString();
          const payload = r.bytesField();
          const encoding = readEncoding(r);
          const attachment = r.opt(() => r.bytesField());
          const timestamp = r.opt(() => readTimestamp(r));
          const qos = r.u8();
          const s = { keyExpr: keyExprStr, payload, kind: SampleKind.Put, encoding };
          publish(session, { ...s, attachment, timestamp, qos });
          return;
        }
        case In.Delete: {
          const keyExprStr = keyExpr(r.str()).toString();
          const attachment = r.opt(() => r.bytesField());
          const timestamp = r.opt(() => readTimestamp(r));
          const qos = r.u8();
          publish(session, {
            keyExpr: keyExprStr,
            payload: new Uint8Array(0),
            kind: SampleKind.Delete,
            encoding: DEFAULT_ENCODING,
            attachment,
            timestamp,
            qos,
          });
          return;
        }
        case In.PublisherPut:
        case In.PublisherDelete: {
          const pid = r.u32();
          const pub = session.publishers.get(pid);
          if (!pub) throw new WireError(`unknown publisher id ${pid}`);
          const isPut = id === In.PublisherPut;
          const payload = isPut ? r.bytesField() : new Uint8Array(0);
          const encoding = isPut
            ? (r.opt(() => readEncoding(r)) ?? pub.encoding)
            : DEFAULT_ENCODING;
          const attachment = r.opt(() => r.bytesField());
          const timestamp = r.opt(() => readTimestamp(r));
          publish(session, {
            keyExpr: pub.ke,
            payload,
            kind: isPut ? SampleKind.Put : SampleKind.Delete,
            encoding,
            attachment,
            timestamp,
            qos: pub.qos,
          });
          return;
        }
        case In.Get: {
          const getId = r.u32();
          const ke = keyExpr(r.str());
          const params = r.str();
          const payload = r.opt(() => r.bytesField());
          const encoding = r.opt(() => readEncoding(r));
          const attachment = r.opt(() => r.bytesField());
          const qos = r.u8();
          const qs = r.u8();
          const timeoutMs = r.u32();
          startGet(session, getId, ke, params, payload, encoding, attachment, qos, qs, timeoutMs);
          return;
        }
        case In.QuerierGet: {
          const getId = r.u32();
          const querierId = r.u32();
          const querier = session.queriers.get(querierId);
          const params = r.str();
          const payload = r.opt(() => r.bytesField());
          const encoding = r.opt(() => readEncoding(r));
          const attachment = r.opt(() => r.bytesField());
          if (!querier) throw new WireError(`unknown querier id ${querierId}`);
          startGet(
            session,
            getId,
            keyExpr(querier.ke),
            params,
            payload,
            encoding,
            attachment,
            querier.qos,
            querier.qs,
            querier.timeoutMs,
          );
          return;
        }
        case In.LivelinessGet: {
          const getId = r.u32();
          const ke = keyExpr(r.str());
          r.u32(); // timeout: answers are immediate here
          for (const other of sessions)
            for (const token of other.tokens.values()) {
              if (!ke.intersects(keyExpr(token))) continue;
              const w = header(new WireWriter(), Out.Reply, undefined).u32(getId).bool(true);
              writeSample(w, livelinessSample(token, SampleKind.Put));
              send(session, w.finish());
            }
          send(
            session,
            header(new WireWriter(), Out.QueryResponseFinal, undefined).u32(getId).finish(),
          );
          return;
        }
        case In.ReplyOk:
        case In.ReplyDel: {
          const queryId = r.u32();
          const keyExprStr = keyExpr(r.str()).toString();
          const isOk = id === In.ReplyOk;
          const payload = isOk ? r.bytesField() : new Uint8Array(0);
          const encoding = isOk ? readEncoding(r) : DEFAULT_ENCODING;
          const attachment = r.opt(() => r.bytesField());
          const timestamp = r.opt(() => readTimestamp(r));
          const qos = r.u8();
          const route = routeOf(session, queryId);
          if (!route) return; // late or unknown: dropped, as zenoh does after the final
          const kind = isOk ? SampleKind.Put : SampleKind.Delete;
          deliverReply(route.get, {
            keyExpr: keyExprStr,
            payload,
            kind,
            encoding,
            attachment,
            timestamp,
            qos,
          });
          return;
        }
        case In.ReplyErr: {
          const queryId = r.u32();
          const payload = r.bytesField();
          const encoding = readEncoding(r);
          const route = routeOf(session, queryId);
          if (!route) return;
          const w = header(new WireWriter(), Out.Reply, undefined).u32(route.get.getId).bool(false);
          w.bytesField(payload);
          writeEncoding(w, encoding);
          send(route.get.getter, w.finish());
          return;
        }
        case In.QueryResponseFinal: {
          const queryId = r.u32();
          if (routeOf(session, queryId)) finalizeQuery(queryId);
          return;
        }
        case In.GetTransports:
          send(session, header(new WireWriter(), Out.Transports, seq).u8(0).finish());
          return;
        case In.GetLinks:
          send(session, header(new WireWriter(), Out.Links, seq).u8(0).finish());
          return;
        default:
          malformed++;
          error(`message id ${id} is not supported by the loopback test router`);
      }
    } catch (err) {
      malformed++;
      error(err instanceof Error ? err.message : String(err));
    }
  }

  function closeSession(session: Session): void {
    if (!session.open) return;
    session.open = false;
    sessions.delete(session);
    // Queries this session was answering count as finished; its own gets are dropped.
    for (const [queryId, route] of routes) if (route.responder === session) finalizeQuery(queryId);
    for (const get of pendingGets) if (get.getter === session) finishGet(get);
    for (const ke of session.tokens.values()) announceToken(ke, SampleKind.Delete);
    session.tokens.clear();
  }

  wss.on("connection", (ws) => {
    const session: Session = {
      ws,
      uuid: randomUUID(),
      zid: randomBytes(16),
      publishers: new Map(),
      subscribers: new Map(),
      queryables: new Map(),
      queriers: new Map(),
      tokens: new Map(),
      livelinessSubscribers: new Map(),
      open: true,
    };
    sessions.add(session);
    ws.on("message", (data, isBinary) => {
      if (!isBinary) {
        malformed++;
        return; // the plugin accepts binary frames only
      }
      const bytes = Array.isArray(data)
        ? Buffer.concat(data)
        : data instanceof ArrayBuffer
          ? new Uint8Array(data)
          : data;
      try {
        handle(session, bytes);
      } catch {
        malformed++; // a header too short to answer
      }
    });
    ws.on("close", () => closeSession(session));
    ws.on("error", () => closeSession(session));
  });

  return {
    port,
    locator: `ws/127.0.0.1:${port}`,
    stats() {
      let subscribers = 0;
      let queryables = 0;
      let livelinessTokens = 0;
      for (const s of sessions) {
        subscribers += s.subscribers.size;
        queryables += s.queryables.size;
        livelinessTokens += s.tokens.size;
      }
      return {
        sessions: sessions.size,
        subscribers,
        queryables,
        livelinessTokens,
        pendingQueries: pendingGets.size,
        malformedMessages: malformed,
      };
    },
    async close() {
      for (const s of [...sessions]) {
        closeSession(s);
        s.ws.terminate();
      }
      await new Promise<void>((resolve) => wss.close(() => resolve()));
    },
  };
}
