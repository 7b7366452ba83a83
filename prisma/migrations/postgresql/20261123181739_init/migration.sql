-- CreateSchema
CREATE SCHEMA IF NOT EXISTS "public";

-- CreateTable
CREATE TABLE "Organization" (
    "id" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "createdAt" BIGINT NOT NULL,

    CONSTRAINT "Organization_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "Project" (
    "id" TEXT NOT NULL,
    "organizationId" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "slug" TEXT NOT NULL,
    "createdAt" BIGINT NOT NULL,

    CONSTRAINT "Project_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "ApiKey" (
    "id" TEXT NOT NULL,
    "projectId" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "hash" TEXT NOT NULL,
    "prefix" TEXT NOT NULL,
    "createdAt" BIGINT NOT NULL,
    "revokedAt" BIGINT,
    "development" BOOLEAN NOT NULL DEFAULT false,
    "announcedAt" BIGINT,

    CONSTRAINT "ApiKey_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "SeedRun" (
    "module" TEXT NOT NULL,
    "seededAt" BIGINT NOT NULL,

    CONSTRAINT "SeedRun_pkey" PRIMARY KEY ("module")
);

-- CreateTable
CREATE TABLE "Hardware" (
    "id" TEXT NOT NULL,
    "gpuType" TEXT NOT NULL,
    "gpuLink" TEXT NOT NULL,
    "gpuMemory" INTEGER NOT NULL,
    "gpuCount" INTEGER NOT NULL,
    "centsPerMinute" DOUBLE PRECISION NOT NULL,
    "capacityGpus" INTEGER NOT NULL,
    "updatedAt" BIGINT NOT NULL,

    CONSTRAINT "Hardware_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "Model" (
    "id" TEXT NOT NULL,
    "projectId" TEXT,
    "name" TEXT NOT NULL,
    "nameKey" TEXT,
    "type" TEXT NOT NULL,
    "modelType" TEXT NOT NULL DEFAULT 'model',
    "architecture" TEXT,
    "baseModelId" TEXT,
    "loraModel" TEXT,
    "serverless" BOOLEAN NOT NULL DEFAULT false,
    "minGpuMemory" INTEGER,
    "contextLength" INTEGER,
    "dimensions" INTEGER,
    "organization" TEXT,
    "pricing" TEXT NOT NULL DEFAULT '{}',
    "description" TEXT,
    "displayName" TEXT,
    "link" TEXT,
    "license" TEXT,
    "capabilities" TEXT NOT NULL DEFAULT '[]',
    "source" TEXT,
    "sourceKind" TEXT,
    "status" TEXT NOT NULL DEFAULT 'ready',
    "createdAt" BIGINT NOT NULL,

    CONSTRAINT "Model_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "ModelUploadJob" (
    "id" TEXT NOT NULL,
    "projectId" TEXT NOT NULL,
    "modelId" TEXT NOT NULL,
    "type" TEXT NOT NULL,
    "status" TEXT NOT NULL,
    "statusUpdates" TEXT NOT NULL DEFAULT '[]',
    "args" TEXT NOT NULL,
    "createdAt" BIGINT NOT NULL,
    "updatedAt" BIGINT NOT NULL,

    CONSTRAINT "ModelUploadJob_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "HardwareReservation" (
    "id" TEXT NOT NULL,
    "projectId" TEXT NOT NULL,
    "hardwareId" TEXT NOT NULL,
    "gpus" INTEGER NOT NULL,
    "ownerKind" TEXT NOT NULL,
    "ownerId" TEXT NOT NULL,
    "startedAt" BIGINT NOT NULL,
    "endedAt" BIGINT,
    "centsPerMinute" DOUBLE PRECISION NOT NULL,

    CONSTRAINT "HardwareReservation_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "Cluster" (
    "id" TEXT NOT NULL,
    "projectId" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "region" TEXT NOT NULL,
    "clusterType" TEXT NOT NULL,
    "gpuType" TEXT NOT NULL,
    "cudaVersion" TEXT NOT NULL DEFAULT '',
    "nvidiaDriverVersion" TEXT NOT NULL DEFAULT '',
    "billingType" TEXT NOT NULL DEFAULT 'RESERVED',
    "numReservedGpus" INTEGER NOT NULL DEFAULT 0,
    "createdAt" BIGINT NOT NULL,

    CONSTRAINT "Cluster_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "ComputeHost" (
    "id" TEXT NOT NULL,
    "projectId" TEXT NOT NULL,
    "clusterId" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "numGpus" INTEGER NOT NULL,
    "vmCapacity" INTEGER NOT NULL,
    "cordoned" BOOLEAN NOT NULL DEFAULT false,
    "cordonedAt" BIGINT,

    CONSTRAINT "ComputeHost_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "ComputeInstance" (
    "id" TEXT NOT NULL,
    "projectId" TEXT NOT NULL,
    "clusterId" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "numGpus" INTEGER NOT NULL,
    "numCpuCores" INTEGER NOT NULL DEFAULT 0,
    "memoryGib" DOUBLE PRECISION NOT NULL DEFAULT 0,
    "status" TEXT NOT NULL,
    "vmId" TEXT,
    "vmGeneration" INTEGER NOT NULL DEFAULT 1,
    "unrecoverable" BOOLEAN NOT NULL DEFAULT false,
    "updatedAt" BIGINT NOT NULL,

    CONSTRAINT "ComputeInstance_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "ComputeVm" (
    "id" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "projectId" TEXT NOT NULL,
    "clusterId" TEXT NOT NULL,
    "instanceId" TEXT NOT NULL,
    "hostId" TEXT NOT NULL,
    "bootCount" INTEGER NOT NULL DEFAULT 1,
    "createdAt" BIGINT NOT NULL,
    "lastBootAt" BIGINT NOT NULL,
    "deletedAt" BIGINT,
    "phaseTransitions" TEXT NOT NULL DEFAULT '[]',

    CONSTRAINT "ComputeVm_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "PassiveHealthCheckAlert" (
    "id" TEXT NOT NULL,
    "projectId" TEXT NOT NULL,
    "clusterId" TEXT NOT NULL,
    "instanceId" TEXT NOT NULL,
    "targetVm" TEXT NOT NULL,
    "alertName" TEXT NOT NULL,
    "severity" TEXT NOT NULL,
    "annotations" TEXT NOT NULL DEFAULT '{}',
    "startedAt" BIGINT NOT NULL,
    "resolvedAt" BIGINT,
    "remediationId" TEXT,

    CONSTRAINT "PassiveHealthCheckAlert_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "Remediation" (
    "id" TEXT NOT NULL,
    "projectId" TEXT NOT NULL,
    "clusterId" TEXT NOT NULL,
    "instanceId" TEXT NOT NULL,
    "mode" TEXT NOT NULL,
    "trigger" TEXT NOT NULL,
    "state" TEXT NOT NULL,
    "reason" TEXT,
    "passiveHealthCheckEventId" TEXT,
    "requestedBy" TEXT,
    "reviewedBy" TEXT,
    "reviewTime" BIGINT,
    "reviewComment" TEXT,
    "startTime" BIGINT,
    "endTime" BIGINT,
    "errorMessage" TEXT,
    "createTime" BIGINT NOT NULL,
    "updateTime" BIGINT NOT NULL,

    CONSTRAINT "Remediation_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "IdempotencyRecord" (
    "projectId" TEXT NOT NULL,
    "operation" TEXT NOT NULL,
    "key" TEXT NOT NULL,
    "requestHash" TEXT NOT NULL,
    "response" TEXT NOT NULL,
    "createdAt" BIGINT NOT NULL,

    CONSTRAINT "IdempotencyRecord_pkey" PRIMARY KEY ("projectId","operation","key")
);

-- CreateTable
CREATE TABLE "V1Endpoint" (
    "id" TEXT NOT NULL,
    "projectId" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "displayName" TEXT NOT NULL,
    "modelId" TEXT NOT NULL,
    "hardwareId" TEXT NOT NULL,
    "minReplicas" INTEGER NOT NULL,
    "maxReplicas" INTEGER NOT NULL,
    "state" TEXT NOT NULL,
    "inactiveTimeout" INTEGER,
    "createdAt" BIGINT NOT NULL,
    "updatedAt" BIGINT NOT NULL,

    CONSTRAINT "V1Endpoint_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "ModelConfig" (
    "id" TEXT NOT NULL,
    "projectId" TEXT,
    "referenceModelId" TEXT NOT NULL,
    "selectors" TEXT NOT NULL,
    "optimizationProfile" TEXT NOT NULL,
    "certifications" TEXT NOT NULL DEFAULT '[]',
    "createdAt" BIGINT NOT NULL,

    CONSTRAINT "ModelConfig_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "DedicatedEndpoint" (
    "id" TEXT NOT NULL,
    "projectId" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "visibility" TEXT NOT NULL,
    "trafficSplit" TEXT NOT NULL DEFAULT '[]',
    "routedCount" INTEGER NOT NULL DEFAULT 0,
    "eventSeq" INTEGER NOT NULL DEFAULT 0,
    "etag" TEXT NOT NULL,
    "createdAt" BIGINT NOT NULL,
    "updatedAt" BIGINT NOT NULL,

    CONSTRAINT "DedicatedEndpoint_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "Deployment" (
    "id" TEXT NOT NULL,
    "projectId" TEXT NOT NULL,
    "endpointId" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "modelId" TEXT NOT NULL,
    "modelRevisionId" TEXT NOT NULL,
    "configId" TEXT NOT NULL,
    "minReplicas" INTEGER NOT NULL,
    "maxReplicas" INTEGER NOT NULL,
    "scaleDownWindow" TEXT,
    "scaleUpWindow" TEXT,
    "scaleToZeroWindow" TEXT,
    "scalingMetrics" TEXT,
    "enableLora" BOOLEAN NOT NULL DEFAULT false,
    "placement" TEXT,
    "state" TEXT NOT NULL,
    "message" TEXT NOT NULL,
    "hardwareId" TEXT,
    "readyReplicas" INTEGER NOT NULL DEFAULT 0,
    "trafficMode" TEXT NOT NULL,
    "epoch" INTEGER NOT NULL DEFAULT 0,
    "etag" TEXT NOT NULL,
    "createdAt" BIGINT NOT NULL,
    "updatedAt" BIGINT NOT NULL,

    CONSTRAINT "Deployment_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "EndpointEvent" (
    "id" TEXT NOT NULL,
    "projectId" TEXT NOT NULL,
    "endpointId" TEXT NOT NULL,
    "seq" INTEGER NOT NULL,
    "type" TEXT NOT NULL,
    "level" TEXT NOT NULL,
    "sourceKind" TEXT NOT NULL,
    "source" TEXT NOT NULL,
    "deploymentId" TEXT,
    "message" TEXT NOT NULL,
    "name" TEXT,
    "paths" TEXT,
    "status" TEXT,
    "reason" TEXT,
    "oldReplicas" INTEGER,
    "newReplicas" INTEGER,
    "createdAt" BIGINT NOT NULL,

    CONSTRAINT "EndpointEvent_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "AdapterBinding" (
    "id" TEXT NOT NULL,
    "projectId" TEXT NOT NULL,
    "endpointId" TEXT NOT NULL,
    "adapterModelId" TEXT NOT NULL,
    "createdAt" BIGINT NOT NULL,

    CONSTRAINT "AdapterBinding_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "EvaluationJob" (
    "id" TEXT NOT NULL,
    "projectId" TEXT NOT NULL,
    "type" TEXT NOT NULL,
    "status" TEXT NOT NULL,
    "parameters" TEXT NOT NULL,
    "statusUpdates" TEXT NOT NULL DEFAULT '[]',
    "results" TEXT,
    "resultFileId" TEXT,
    "createdAt" BIGINT NOT NULL,
    "updatedAt" BIGINT NOT NULL,

    CONSTRAINT "EvaluationJob_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "File" (
    "id" TEXT NOT NULL,
    "projectId" TEXT NOT NULL,
    "filename" TEXT NOT NULL,
    "purpose" TEXT NOT NULL,
    "fileType" TEXT NOT NULL,
    "bytes" BIGINT NOT NULL,
    "path" TEXT NOT NULL,
    "status" TEXT NOT NULL,
    "report" TEXT,
    "createdAt" BIGINT NOT NULL,

    CONSTRAINT "File_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "FineTune" (
    "id" TEXT NOT NULL,
    "projectId" TEXT NOT NULL,
    "userId" TEXT NOT NULL,
    "status" TEXT NOT NULL,
    "model" TEXT NOT NULL,
    "trainingFile" TEXT NOT NULL,
    "validationFile" TEXT,
    "params" TEXT NOT NULL,
    "outputName" TEXT NOT NULL,
    "tokenCount" INTEGER,
    "evalTokenCount" INTEGER,
    "totalPriceCents" INTEGER,
    "metrics" TEXT,
    "totalSteps" INTEGER,
    "epochsCompleted" INTEGER,
    "trainingLines" INTEGER,
    "trainingBytes" BIGINT,
    "earlyStopped" BOOLEAN,
    "bestStep" INTEGER,
    "bestMetric" DOUBLE PRECISION,
    "outputModelId" TEXT,
    "error" TEXT,
    "createdAt" BIGINT NOT NULL,
    "updatedAt" BIGINT NOT NULL,
    "startedAt" BIGINT,

    CONSTRAINT "FineTune_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "FineTuneEvent" (
    "id" TEXT NOT NULL,
    "jobId" TEXT NOT NULL,
    "type" TEXT NOT NULL,
    "level" TEXT,
    "message" TEXT NOT NULL,
    "data" TEXT NOT NULL DEFAULT '{}',
    "createdAt" BIGINT NOT NULL,

    CONSTRAINT "FineTuneEvent_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "FineTuneCheckpoint" (
    "id" TEXT NOT NULL,
    "jobId" TEXT NOT NULL,
    "step" INTEGER NOT NULL,
    "type" TEXT NOT NULL,
    "kind" TEXT NOT NULL,
    "createdAt" BIGINT NOT NULL,

    CONSTRAINT "FineTuneCheckpoint_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "QueueJob" (
    "id" TEXT NOT NULL,
    "projectId" TEXT NOT NULL,
    "model" TEXT NOT NULL,
    "status" TEXT NOT NULL,
    "priority" INTEGER NOT NULL DEFAULT 0,
    "inputs" TEXT NOT NULL,
    "info" TEXT NOT NULL DEFAULT '{}',
    "outputs" TEXT,
    "warnings" TEXT NOT NULL DEFAULT '[]',
    "retries" INTEGER NOT NULL DEFAULT 0,
    "claimToken" TEXT,
    "workerId" TEXT,
    "claimTimeoutMs" INTEGER,
    "claimUntil" BIGINT,
    "claimedAt" BIGINT,
    "doneAt" BIGINT,
    "createdAt" BIGINT NOT NULL,
    "updatedAt" BIGINT NOT NULL,

    CONSTRAINT "QueueJob_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "WorkItem" (
    "id" TEXT NOT NULL,
    "kind" TEXT NOT NULL,
    "subjectId" TEXT NOT NULL,
    "projectId" TEXT,
    "payload" TEXT NOT NULL DEFAULT '{}',
    "state" TEXT NOT NULL,
    "runAt" BIGINT NOT NULL,
    "attempt" INTEGER NOT NULL DEFAULT 0,
    "failures" INTEGER NOT NULL DEFAULT 0,
    "leaseOwner" TEXT,
    "leaseUntil" BIGINT,
    "heartbeatAt" BIGINT,
    "lastError" TEXT,
    "createdAt" BIGINT NOT NULL,
    "updatedAt" BIGINT NOT NULL,

    CONSTRAINT "WorkItem_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "Volume" (
    "id" TEXT NOT NULL,
    "projectId" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "type" TEXT NOT NULL,
    "currentVersion" INTEGER NOT NULL,
    "createdAt" BIGINT NOT NULL,
    "updatedAt" BIGINT NOT NULL,

    CONSTRAINT "Volume_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "VolumeVersion" (
    "volumeId" TEXT NOT NULL,
    "version" INTEGER NOT NULL,
    "contentType" TEXT NOT NULL,
    "sourcePrefix" TEXT NOT NULL,
    "files" TEXT NOT NULL DEFAULT '[]',
    "createdAt" BIGINT NOT NULL,

    CONSTRAINT "VolumeVersion_pkey" PRIMARY KEY ("volumeId","version")
);

-- CreateTable
CREATE TABLE "VolumeMount" (
    "volumeId" TEXT NOT NULL,
    "deploymentId" TEXT NOT NULL,
    "projectId" TEXT NOT NULL,
    "version" INTEGER NOT NULL,

    CONSTRAINT "VolumeMount_pkey" PRIMARY KEY ("volumeId","deploymentId")
);

-- CreateTable
CREATE TABLE "Secret" (
    "id" TEXT NOT NULL,
    "projectId" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "description" TEXT,
    "valueEncrypted" TEXT NOT NULL,
    "createdBy" TEXT NOT NULL,
    "lastUpdatedBy" TEXT NOT NULL,
    "createdAt" BIGINT NOT NULL,
    "updatedAt" BIGINT NOT NULL,

    CONSTRAINT "Secret_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "Video" (
    "id" TEXT NOT NULL,
    "projectId" TEXT NOT NULL,
    "model" TEXT NOT NULL,
    "status" TEXT NOT NULL,
    "params" TEXT NOT NULL,
    "width" INTEGER NOT NULL,
    "height" INTEGER NOT NULL,
    "seconds" TEXT NOT NULL,
    "apiVersion" TEXT NOT NULL,
    "warnings" TEXT NOT NULL DEFAULT '[]',
    "file" TEXT,
    "bytes" INTEGER,
    "costCents" INTEGER,
    "errorCode" TEXT,
    "errorMessage" TEXT,
    "createdAt" BIGINT NOT NULL,
    "completedAt" BIGINT,

    CONSTRAINT "Video_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "Project_slug_key" ON "Project"("slug");

-- CreateIndex
CREATE INDEX "Project_organizationId_idx" ON "Project"("organizationId");

-- CreateIndex
CREATE UNIQUE INDEX "ApiKey_hash_key" ON "ApiKey"("hash");

-- CreateIndex
CREATE INDEX "ApiKey_projectId_idx" ON "ApiKey"("projectId");

-- CreateIndex
CREATE INDEX "Model_projectId_idx" ON "Model"("projectId");

-- CreateIndex
CREATE INDEX "Model_baseModelId_idx" ON "Model"("baseModelId");

-- CreateIndex
CREATE UNIQUE INDEX "Model_projectId_nameKey_key" ON "Model"("projectId", "nameKey");

-- CreateIndex
CREATE INDEX "ModelUploadJob_projectId_createdAt_idx" ON "ModelUploadJob"("projectId", "createdAt");

-- CreateIndex
CREATE INDEX "HardwareReservation_hardwareId_endedAt_idx" ON "HardwareReservation"("hardwareId", "endedAt");

-- CreateIndex
CREATE INDEX "HardwareReservation_ownerKind_ownerId_idx" ON "HardwareReservation"("ownerKind", "ownerId");

-- CreateIndex
CREATE INDEX "Cluster_projectId_idx" ON "Cluster"("projectId");

-- CreateIndex
CREATE UNIQUE INDEX "ComputeHost_clusterId_name_key" ON "ComputeHost"("clusterId", "name");

-- CreateIndex
CREATE UNIQUE INDEX "ComputeInstance_clusterId_name_key" ON "ComputeInstance"("clusterId", "name");

-- CreateIndex
CREATE INDEX "ComputeVm_clusterId_deletedAt_idx" ON "ComputeVm"("clusterId", "deletedAt");

-- CreateIndex
CREATE INDEX "ComputeVm_hostId_deletedAt_idx" ON "ComputeVm"("hostId", "deletedAt");

-- CreateIndex
CREATE INDEX "PassiveHealthCheckAlert_remediationId_idx" ON "PassiveHealthCheckAlert"("remediationId");

-- CreateIndex
CREATE INDEX "PassiveHealthCheckAlert_instanceId_idx" ON "PassiveHealthCheckAlert"("instanceId");

-- CreateIndex
CREATE INDEX "Remediation_instanceId_state_idx" ON "Remediation"("instanceId", "state");

-- CreateIndex
CREATE INDEX "Remediation_projectId_idx" ON "Remediation"("projectId");

-- CreateIndex
CREATE UNIQUE INDEX "V1Endpoint_projectId_name_key" ON "V1Endpoint"("projectId", "name");

-- CreateIndex
CREATE INDEX "ModelConfig_referenceModelId_idx" ON "ModelConfig"("referenceModelId");

-- CreateIndex
CREATE UNIQUE INDEX "DedicatedEndpoint_projectId_name_key" ON "DedicatedEndpoint"("projectId", "name");

-- CreateIndex
CREATE INDEX "Deployment_projectId_idx" ON "Deployment"("projectId");

-- CreateIndex
CREATE UNIQUE INDEX "Deployment_endpointId_name_key" ON "Deployment"("endpointId", "name");

-- CreateIndex
CREATE UNIQUE INDEX "EndpointEvent_endpointId_seq_key" ON "EndpointEvent"("endpointId", "seq");

-- CreateIndex
CREATE UNIQUE INDEX "AdapterBinding_endpointId_adapterModelId_key" ON "AdapterBinding"("endpointId", "adapterModelId");

-- CreateIndex
CREATE INDEX "EvaluationJob_projectId_createdAt_idx" ON "EvaluationJob"("projectId", "createdAt");

-- CreateIndex
CREATE INDEX "File_projectId_createdAt_idx" ON "File"("projectId", "createdAt");

-- CreateIndex
CREATE INDEX "FineTune_projectId_createdAt_idx" ON "FineTune"("projectId", "createdAt");

-- CreateIndex
CREATE INDEX "FineTuneEvent_jobId_id_idx" ON "FineTuneEvent"("jobId", "id");

-- CreateIndex
CREATE INDEX "FineTuneCheckpoint_jobId_step_idx" ON "FineTuneCheckpoint"("jobId", "step");

-- CreateIndex
CREATE INDEX "QueueJob_projectId_model_status_priority_createdAt_id_idx" ON "QueueJob"("projectId", "model", "status", "priority" DESC, "createdAt", "id");

-- CreateIndex
CREATE INDEX "QueueJob_status_claimUntil_idx" ON "QueueJob"("status", "claimUntil");

-- CreateIndex
CREATE INDEX "WorkItem_state_runAt_idx" ON "WorkItem"("state", "runAt");

-- CreateIndex
CREATE INDEX "WorkItem_subjectId_idx" ON "WorkItem"("subjectId");

-- CreateIndex
CREATE UNIQUE INDEX "Volume_projectId_name_key" ON "Volume"("projectId", "name");

-- CreateIndex
CREATE INDEX "VolumeMount_deploymentId_idx" ON "VolumeMount"("deploymentId");

-- CreateIndex
CREATE UNIQUE INDEX "Secret_projectId_name_key" ON "Secret"("projectId", "name");

-- CreateIndex
CREATE INDEX "Video_projectId_createdAt_idx" ON "Video"("projectId", "createdAt");

-- AddForeignKey
ALTER TABLE "Project" ADD CONSTRAINT "Project_organizationId_fkey" FOREIGN KEY ("organizationId") REFERENCES "Organization"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "ApiKey" ADD CONSTRAINT "ApiKey_projectId_fkey" FOREIGN KEY ("projectId") REFERENCES "Project"("id") ON DELETE RESTRICT ON UPDATE CASCADE;
