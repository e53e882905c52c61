mod mask;
mod normalised;
mod secret_scan;
