"""An image-regression project split over modules: data, coordinate helpers, model, engine."""
