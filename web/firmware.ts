// The firmware examples' prebuilt ELFs, embedded in the worker's bundle (esbuild's binary
// loader), so the page needs no toolchain and no extra request.
import hello from "../firmware/examples/hello.elf";
import psum from "../firmware/examples/psum.elf";
import fault from "../firmware/examples/fault.elf";
import nic from "../firmware/examples/nic.elf";
import pingpong from "../firmware/examples/pingpong.elf";
import list from "../firmware/examples/list.elf";
import recurse from "../firmware/examples/recurse.elf";

export const FIRMWARE: Readonly<Record<string, Uint8Array>> = { hello, psum, fault, nic, pingpong, list, recurse };
