// The Debian tools the writes benchmark drives, installed when missing (as .ci/run does),
// and the small C load generator it builds from c/grpc-load.c.
import { execFileSync, spawn } from "node:child_process";
import { accessSync, constants, existsSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

/** A tool the benchmark needs and the Debian package that ships it. */
export interface SystemTool {
  /** Command name on PATH, or an absolute path of a file (a header). */
  readonly file: string;
  readonly debianPackage: string;
}

/** Everything `bench:writes` runs or builds with. */
export const WRITES_TOOLS: readonly SystemTool[] = [
  { file: "h2load", debianPackage: "nghttp2-client" },
  { file: "redis-server", debianPackage: "redis-server" },
  { file: "redis-benchmark", debianPackage: "redis-tools" },
  { file: "etcd", debianPackage: "etcd-server" },
  { file: "etcdctl", debianPackage: "etcd-client" },
  { file: "gcc", debianPackage: "gcc" },
  { file: "/usr/include/stdio.h", debianPackage: "libc6-dev" },
  { file: "/usr/include/nghttp2/nghttp2.h", debianPackage: "libnghttp2-dev" },
];

/** The one-liner that installs them all on Debian/Ubuntu. */
export const INSTALL_HINT: string = `sudo apt-get install -y ${[...new Set(WRITES_TOOLS.map((t) => t.debianPackage))].join(" ")}`;

/** Absolute path of `command` on PATH, or undefined. Absolute names are checked as files. */
export function which(command: string): string | undefined {
  if (command.includes("/")) return existsSync(command) ? command : undefined;
  for (const dir of (process.env.PATH ?? "").split(":")) {
    if (dir === "") continue;
    const p = path.join(dir, command);
    try {
      accessSync(p, constants.X_OK);
      return p;
    } catch {
      // not here
    }
  }
  return undefined;
}

/** Debian packages of the tools that are missing. */
export function missingPackages(tools: readonly SystemTool[] = WRITES_TOOLS): string[] {
  return [...new Set(tools.filter((t) => which(t.file) === undefined).map((t) => t.debianPackage))];
}

/**
 * Makes sure every tool is present: installs the missing Debian packages with apt-get when
 * running as root (quietly, as `.ci/run` does), otherwise throws with {@link INSTALL_HINT}.
 */
export function ensureWritesTools(log: (msg: string) => void): void {
  const missing = missingPackages();
  if (missing.length === 0) return;
  const root = process.getuid?.() === 0;
  if (root && which("apt-get") !== undefined) {
    log(`installing missing Debian packages: ${missing.join(" ")}`);
    try {
      execFileSync("apt-get", ["update", "-qq"], { stdio: "ignore" });
      execFileSync("apt-get", ["install", "-y", "-qq", ...missing], {
        stdio: "ignore",
        env: { ...process.env, DEBIAN_FRONTEND: "noninteractive" },
      });
    } catch (err) {
      throw new Error(
        `could not install ${missing.join(" ")} (${(err as Error).message}); install them with:\n  ${INSTALL_HINT}`,
      );
    }
    const still = missingPackages();
    if (still.length === 0) return;
    missing.splice(0, missing.length, ...still);
  }
  throw new Error(
    `missing tools (Debian packages ${missing.join(" ")}); install with:\n  ${INSTALL_HINT}`,
  );
}

/** First line of `command --version`-style output, for the results header. */
export function toolVersion(command: string, args: readonly string[] = ["--version"]): string {
  try {
    const out = execFileSync(command, [...args], {
      encoding: "utf8",
      stdio: ["ignore", "pipe", "pipe"],
    });
    return out.split("\n")[0]?.trim() ?? "?";
  } catch {
    return "?";
  }
}

/** Source of the C generator. */
export const GRPC_LOAD_SOURCE: string = fileURLToPath(new URL("../c/grpc-load.c", import.meta.url));

/** Compiles c/grpc-load.c into `outDir` (gcc -O2, libnghttp2); returns the binary's path. */
export function buildGrpcLoad(outDir: string): string {
  const bin = path.join(outDir, "grpc-load");
  execFileSync(
    "gcc",
    ["-O2", "-Wall", "-Wextra", "-Werror", "-o", bin, GRPC_LOAD_SOURCE, "-lnghttp2", "-lm"],
    { stdio: ["ignore", "pipe", "pipe"] },
  );
  return bin;
}

/** Result of {@link runTool}. */
export interface ToolRun {
  readonly stdout: string;
  readonly stderr: string;
  readonly code: number | null;
}

const running = new Set<ReturnType<typeof spawn>>();
process.on("exit", () => {
  for (const p of running) p.kill("SIGKILL");
});

/**
 * Runs a load generator to completion (killed after `timeoutMs`). `onLine` sees each stdout
 * line as it arrives (grpc-load's window markers). Rejects on a non-zero exit.
 */
export function runTool(
  command: string,
  args: readonly string[],
  options: { timeoutMs: number; onLine?: (line: string) => void },
): Promise<ToolRun> {
  return new Promise((resolve, reject) => {
    const p = spawn(command, [...args], { stdio: ["ignore", "pipe", "pipe"] });
    running.add(p);
    let out = "";
    let err = "";
    let partial = "";
    p.stdout.setEncoding("utf8");
    p.stderr.setEncoding("utf8");
    p.stdout.on("data", (d: string) => {
      if (out.length < 1_000_000) out += d;
      if (options.onLine === undefined) return;
      partial += d;
      let i = partial.indexOf("\n");
      while (i >= 0) {
        options.onLine(partial.slice(0, i));
        partial = partial.slice(i + 1);
        i = partial.indexOf("\n");
      }
    });
    p.stderr.on("data", (d: string) => {
      if (err.length < 100_000) err += d;
    });
    const timer = setTimeout(() => p.kill("SIGKILL"), options.timeoutMs);
    p.once("error", (e) => {
      clearTimeout(timer);
      running.delete(p);
      reject(e);
    });
    p.once("close", (code, signal) => {
      clearTimeout(timer);
      running.delete(p);
      if (code === 0) resolve({ stdout: out, stderr: err, code });
      else
        reject(
          new Error(
            `${path.basename(command)} ${signal !== null ? `killed by ${signal} (timeout ${options.timeoutMs} ms?)` : `exited ${code}`}:\n${(err || out).slice(-1500)}`,
          ),
        );
    });
  });
}
