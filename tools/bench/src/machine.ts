import os from "node:os";

/** The machine a run happened on. */
export interface MachineInfo {
  readonly cores: number;
  readonly cpuModel: string;
  readonly memoryGiB: number;
  readonly node: string;
  readonly kernel: string;
  readonly loadStart: readonly number[];
}

/** Reads the machine description (and the load average now, as the start load). */
export function machineInfo(): MachineInfo {
  return {
    cores: os.cpus().length,
    cpuModel: os.cpus()[0]?.model.trim() ?? "unknown",
    memoryGiB: Math.round((os.totalmem() / 1024 ** 3) * 10) / 10,
    node: process.version,
    kernel: `${os.type()} ${os.release()}`,
    loadStart: os.loadavg(),
  };
}

/** `1.23 / 4.56 / 7.89` (1, 5 and 15 minutes). */
export function fmtLoad(load: readonly number[]): string {
  return load.map((l) => l.toFixed(2)).join(" / ");
}
