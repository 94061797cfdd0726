import { existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { afterAll, describe, expect, it } from "vitest";
import { SnapshotFile } from "./snapshot-file.js";

const dir = mkdtempSync(join(tmpdir(), "snapshot-file-test-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function* each(pages: Uint8Array[]): AsyncGenerator<Uint8Array> {
  for (const p of pages) yield p;
}

describe("SnapshotFile", () => {
  it("reads back any range of the pages written, and nothing once removed", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.uint8Array({ maxLength: 300 }), { maxLength: 8 }),
        fc.array(fc.tuple(fc.nat(2_500), fc.nat(2_500)), { minLength: 1, maxLength: 5 }),
        async (pages, ranges) => {
          const all = Buffer.concat(pages);
          const f = await SnapshotFile.write(dir, "g/0-7", each(pages));
          expect(f.byteLength).toBe(all.byteLength);
          for (const [a, b] of ranges) {
            const start = Math.min(a, b, all.byteLength);
            const end = Math.max(a, b);
            expect(Buffer.from(f.subarray(start, end))).toEqual(all.subarray(start, end));
          }
          f.remove();
          expect(existsSync(f.path)).toBe(false);
          expect(() => f.subarray(0, 1)).toThrow(/removed/);
        },
      ),
      { numRuns: 100 },
    );
    expect(readdirSync(dir)).toEqual([]);
  });

  it("leaves no file when the reader fails", async () => {
    async function* failing(): AsyncGenerator<Uint8Array> {
      yield new Uint8Array(10);
      throw new Error("the shard could not be read");
    }
    await expect(SnapshotFile.write(dir, "g/1", failing())).rejects.toThrow(/could not be read/);
    expect(readdirSync(dir)).toEqual([]);
  });

  it("receives chunks into a file: finished, it reads back and moves durably; discarded, it is gone", async () => {
    const sink = SnapshotFile.receive(join(dir, "g+1.part"));
    sink.append(Uint8Array.of(1, 2, 3));
    sink.append(new Uint8Array(0));
    sink.append(Uint8Array.of(4, 5));
    const file = sink.finish();
    expect(file.byteLength).toBe(5);
    expect([...file.subarray(1, 4)]).toEqual([2, 3, 4]);
    await file.persistAs(join(dir, "g@9.install"));
    expect(readdirSync(dir)).toEqual(["g@9.install"]);
    file.close();
    const again = SnapshotFile.open(join(dir, "g@9.install"));
    expect([...again.subarray(0, 5)]).toEqual([1, 2, 3, 4, 5]);
    again.remove();
    const dropped = SnapshotFile.receive(join(dir, "g+2.part"));
    dropped.append(Uint8Array.of(1));
    dropped.discard();
    expect(readdirSync(dir)).toEqual([]);
    // A name taken is refused (two transfers never share a file).
    const first = SnapshotFile.receive(join(dir, "g+3.part"));
    expect(() => SnapshotFile.receive(join(dir, "g+3.part"))).toThrow(/EEXIST/);
    first.discard();
  });
});
