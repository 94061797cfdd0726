// Placement of raft collections: given shard_assignments are kept as given, missing ones are
// filled deterministically with distinct members, and the caller's request is not changed.
import { create, equals } from "@bufbuild/protobuf";
import { type CreateCollectionRequest, CreateCollectionRequestSchema } from "@oprc/grpc-api";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { groupIdOf, parseGroupId, placeCollection, replicasOf } from "./placement.js";

/** Every partition's replicas, in partition order. */
const allReplicas = (spec: CreateCollectionRequest) =>
  Array.from({ length: spec.partitionCount }, (_, p) => replicasOf(spec, p));

/** A cluster's member ids, a replica count it can hold, and a partition count. */
const cluster = fc
  .uniqueArray(fc.integer({ min: 1, max: 50 }), { minLength: 1, maxLength: 9 })
  .chain((members) =>
    fc.record({
      members: fc.constant(members),
      replicaCount: fc.integer({ min: 1, max: members.length }),
      partitionCount: fc.integer({ min: 1, max: 6 }),
    }),
  );

describe("placeCollection", () => {
  it("keeps the shard_assignments it is given, and leaves the request as it was", () => {
    fc.assert(
      fc.property(
        cluster.chain((c) =>
          fc.record({
            c: fc.constant(c),
            // Per partition: a given replica list (a shuffled subset of the members) or none.
            given: fc.array(
              fc.option(
                fc
                  .shuffledSubarray(c.members, {
                    minLength: c.replicaCount,
                    maxLength: c.replicaCount,
                  })
                  .map((r) => r.map(BigInt)),
              ),
              { minLength: c.partitionCount, maxLength: c.partitionCount },
            ),
          }),
        ),
        ({ c, given }) => {
          const spec = create(CreateCollectionRequestSchema, {
            name: "c",
            shardType: "raft",
            partitionCount: c.partitionCount,
            replicaCount: c.replicaCount,
            shardAssignments: given.map((r) =>
              r === null ? {} : { primary: r[0] as bigint, replica: r.slice(1) },
            ),
          });
          const copy = structuredClone(spec);
          const placed = allReplicas(placeCollection(spec, c.members));
          expect(equals(CreateCollectionRequestSchema, spec, copy)).toBe(true);
          expect(placed).toHaveLength(c.partitionCount);
          for (const [p, replicas] of placed.entries()) {
            const g = given[p];
            if (g !== null && g !== undefined) expect(replicas).toEqual(g.map(Number));
            expect(new Set(replicas).size).toBe(c.replicaCount);
            for (const r of replicas) expect(c.members).toContain(r);
          }
        },
      ),
    );
  });

  it("places the same collection the same way on every node", () => {
    fc.assert(
      fc.property(cluster, fc.boolean(), (c, reversed) => {
        const spec = () =>
          create(CreateCollectionRequestSchema, {
            name: "orders",
            shardType: "raft",
            partitionCount: c.partitionCount,
            replicaCount: c.replicaCount,
          });
        const order = reversed ? [...c.members].reverse() : c.members;
        expect(allReplicas(placeCollection(spec(), order))).toEqual(
          allReplicas(placeCollection(spec(), c.members)),
        );
      }),
    );
  });

  it("refuses an assignment naming a node that is not a member, or too few nodes", () => {
    const spec = (replica: bigint[]) =>
      create(CreateCollectionRequestSchema, {
        name: "c",
        shardType: "raft",
        partitionCount: 1,
        replicaCount: 2,
        shardAssignments: [{ primary: 1n, replica }],
      });
    expect(() => placeCollection(spec([9n]), [1, 2, 3])).toThrow(/node 9 is not a member/);
    expect(() => placeCollection(spec([]), [1, 2, 3])).toThrow(/must name 2 distinct nodes/);
    expect(allReplicas(placeCollection(spec([3n]), [1, 2, 3]))).toEqual([[1, 3]]);
  });

  it("gives no replicas past the last partition", () => {
    const spec = placeCollection(
      create(CreateCollectionRequestSchema, {
        name: "c",
        shardType: "raft",
        partitionCount: 2,
        replicaCount: 1,
      }),
      [1, 2],
    );
    expect(replicasOf(spec, 1)).toHaveLength(1);
    expect(replicasOf(spec, 2)).toEqual([]);
  });

  it("reads a group id back into its collection and partition, and nothing else", () => {
    fc.assert(
      fc.property(fc.string({ minLength: 1 }), fc.nat(), (collection, partition) => {
        expect(parseGroupId(groupIdOf(collection, partition))).toEqual({ collection, partition });
      }),
    );
    for (const id of ["meta", "c/", "/0", "c/-1", "c/1.5", "c/x"]) {
      expect(parseGroupId(id), id).toBeUndefined();
    }
  });
});
