"""A small language-model project split over modules: config, data, masks, model, training."""
