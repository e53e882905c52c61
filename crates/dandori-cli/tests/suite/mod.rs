mod plan;
