mod mask;
mod secret_scan;
