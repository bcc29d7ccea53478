"""The new-run wizard: Data, Model, Run folder, Settings, Summary."""
