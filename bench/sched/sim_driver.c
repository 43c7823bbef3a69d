/*
 * bench/sched/sim_driver.c - `loom sim` as a standalone program, so the
 * benchmark runs the simulator from the same sources whether or not the
 * CLI has wired the subcommand in.
 */
#include "sched/sim.h"

int main(int argc, char **argv) { return sim_main(argc, argv); }
