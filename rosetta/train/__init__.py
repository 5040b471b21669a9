"""Training in each framework: one optimiser step at a time, with the same optimiser semantics everywhere.

`optim.OptimizerSpec` says what the optimiser computes (not how one framework spells it); each trainer module
(torch, keras, mxnet) maps it onto its framework's optimiser, bridging the conventions that differ. Trainers
run a converted artifact (or the PyTorch reference) in train mode: BatchNorm uses batch statistics, Dropout
is kept out of comparisons (its random masks differ by framework).
"""
