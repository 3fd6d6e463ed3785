/*
 * list: a linked-list walk that runs off the end of its list, for the symbolised-fault example
 * (docs/engine.md, "Guards"). The walk takes one step too many: the last node's next is NULL,
 * and loading through it traps in the NULL guard. Built with -g (host/fw/examples.ts), so the
 * report names the function and the line:
 *     NULL pointer dereference (load from 0x0, ...) at pc 0x... (sum+0x.., list.c:NN)
 */
#include <menic.h>

struct node {
  int value;
  struct node *next;
};

static struct node nodes[3];

/* Links nodes[0] -> nodes[1] -> nodes[2] -> NULL, with values 1, 2, 3. */
static struct node *build(void) {
  for (int i = 0; i < 3; i++) {
    nodes[i].value = i + 1;
    nodes[i].next = i < 2 ? &nodes[i + 1] : NULL;
  }
  return &nodes[0];
}

/* Sums the values of the first `count` nodes (it trusts count: the bug). */
__attribute__((noinline)) int sum(const struct node *n, int count) {
  int s = 0;
  for (int i = 0; i < count; i++) {
    s += n->value; /* faults here when n is NULL */
    n = n->next;
  }
  return s;
}

volatile int steps = 4; /* one more than the list holds */

int main(void) {
  printf("engine %u: summing\n", menic_hartid());
  return sum(build(), steps);
}
