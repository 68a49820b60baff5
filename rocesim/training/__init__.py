"""Training traffic: dependency graphs (`graph`), collectives (`collectives`) and whole
training iterations from models, ASTRA-sim and Chakra traces (`workloads`)."""
