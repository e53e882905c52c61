mod mask;
mod secret_scan;
mod normalised;
