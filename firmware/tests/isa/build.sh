#!/bin/sh
# Build firmware/tests/isa/isa.elf, the ISA conformance program (see start.S).
# Reproducible: no debug info, relative file names only, fixed file order; the committed
# isa.elf is this script's output with Debian clang 14 + lld (test/isa.test.ts rebuilds
# and compares when that compiler is present).
set -eu
cd "$(dirname "$0")"
CLANG=${CLANG:-clang}
$CLANG --target=riscv32-unknown-elf -march=rv32ima -mabi=ilp32 -O2 -ffreestanding \
	-nostdlib -fno-builtin -mno-relax -fuse-ld=lld -Wl,-T,link.ld -I ../../include \
	-o "${1:-isa.elf}" \
	start.S report.S trap.S rv32i.S rv32m.S rv32a.S csr.S traps.S irq.S multi.S
