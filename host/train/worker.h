/*
 * train/worker.h - `loom worker`: one process per training device. It loads
 * the framework adapter, joins the collective group and runs the steps its
 * coordinator plans (train, validate, checkpoint, finish), replying after
 * each. Started by the coordinator only.
 */
#ifndef LOOM_TRAIN_WORKER_H
#define LOOM_TRAIN_WORKER_H

int train_worker_main(int argc, char **argv);

#endif
