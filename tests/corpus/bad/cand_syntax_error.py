class ModelNew(:
