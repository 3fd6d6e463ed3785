/* Idle firmware for the wfi benchmark: a 1 kHz timer tick (like an RTOS idle loop), the
 * engine asleep in wfi between ticks. Runs until the host stops it. */
#include <menic.h>

static volatile uint32_t ticks;
static uint64_t period; /* engine cycles per tick: mtime counts engine cycles */

__attribute__((interrupt("machine"))) static void on_timer(void) {
  ticks++;
  menic_set_mtimecmp(menic_mtime() + period);
}

int main(void) {
  period = menic_clock_khz(); /* cycles per millisecond */
  menic_set_trap_vector(on_timer, MTVEC_DIRECT);
  menic_set_mtimecmp(menic_mtime() + period);
  menic_timer_irq_enable();
  menic_irq_enable();
  for (;;) menic_wfi();
}
