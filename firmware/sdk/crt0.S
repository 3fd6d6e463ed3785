/*
 * crt0: the first code every message engine runs (docs/engine.md, "Reset").
 *
 * At reset pc is the ELF entry (_start, the first address above the stack), every x register is 0 and mtvec is 0.
 * We deliberately install no trap handler: with mtvec = 0 a synchronous trap stops the engine
 * in state `faulted` and the emulator reports pc, mcause and mtval, which is the most useful
 * outcome for a bug in firmware that did not ask for traps. Nothing here touches HBM: it is
 * shared, and every engine runs this code.
 *
 * gp is left at 0: the SDK builds with -mno-relax, so the compiler and linker never make
 * gp-relative accesses and no __global_pointer$ is needed.
 */
    .section .init, "ax", @progbits
    .globl _start
    .type _start, @function
_start:
    /* The stack grows down from __stack_top toward the NULL guard (link.ld): an overflow traps
     * there. Every engine has its own SRAM, so one address serves all of them. */
    la      sp, __stack_top

    /* Clear .bss (SRAM only; link.ld keeps it word-aligned at both ends). The menic loader
     * already zero-fills memsz > filesz, but C's zero-initialised globals must not depend on
     * which loader put the image there. */
    la      t0, __bss_start
    la      t1, __bss_end
1:  bgeu    t0, t1, 2f
    sw      zero, 0(t0)
    addi    t0, t0, 4
    j       1b
2:
    /* int main(void); its return value becomes the exit code. exit() writes MENIC_SYS_EXIT and
     * the engine stops there. argc/argv are not provided (a0 = a1 = 0 from reset). */
    call    main
    tail    exit
    .size _start, . - _start
