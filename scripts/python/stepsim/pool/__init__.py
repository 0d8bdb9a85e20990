"""Where the points of a search or a sweep run (pool.workers: inline, local processes, a Slurm
array job; pool.worker: a worker process). The pool imports none of its users: a job names its
task function ("module:function") and the worker imports it by that name."""
